/**
 * A TLS client identity from PEM files (CA bundle, certificate, key), read and checked once at start-up:
 * the callbacks to CC and the Loggregator stream both use it, each naming itself in the errors.
 */
import { X509Certificate } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createSecureContext } from 'node:tls';

/** File paths as configured; an empty string counts as unset (env-style settings). */
export interface TlsFiles {
  /** PEM bundle of CAs to trust for the server's certificate, instead of Node's built-in roots. */
  caFile?: string;
  /** PEM client certificate (chain) presented to the server; needs keyFile. */
  certFile?: string;
  /** PEM private key of certFile. */
  keyFile?: string;
  /** Skip verifying the server's certificate. For development only. */
  insecureSkipVerify?: boolean;
}

/** The files' contents, read once at start-up, ready for an https.Agent or gRPC credentials. */
export interface LoadedTls {
  ca?: Buffer;
  cert?: Buffer;
  key?: Buffer;
  rejectUnauthorized: boolean;
}

/** How a caller names its TLS in messages ("callback TLS") and which error it throws. */
export interface TlsFilesUse {
  label: string;
  error: (message: string, file?: string) => Error;
}

function read(use: TlsFilesUse, what: string, file: string | undefined): Buffer | undefined {
  if (file === undefined || file === '') return undefined;
  try {
    return readFileSync(file);
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code ?? (e as Error).message;
    throw use.error(`cannot read ${use.label} ${what} file ${file}: ${code}`, file);
  }
}

const PEM_CERT = /-----BEGIN CERTIFICATE-----[\s\S]*?-----END CERTIFICATE-----/g;

// createSecureContext silently ignores a CA file without certificates, which would only show later as
// every request failing verification; so each block is parsed here.
function checkCaBundle(use: TlsFilesUse, ca: Buffer, file: string): void {
  const blocks = ca.toString('utf8').match(PEM_CERT) ?? [];
  if (blocks.length === 0) throw use.error(`${use.label} CA file ${file} holds no PEM certificate`, file);
  for (const block of blocks) {
    try {
      new X509Certificate(block);
    } catch (e) {
      throw use.error(
        `${use.label} CA file ${file} holds an unusable certificate: ${(e as Error).message}`,
        file,
      );
    }
  }
}

/**
 * Reads the configured files and checks they form a usable identity now, so a bad key or a cert/key
 * mismatch stops the process at start-up instead of failing every request later.
 */
export function loadTlsFiles(use: TlsFilesUse, opts: TlsFiles): LoadedTls {
  const ca = read(use, 'CA', opts.caFile);
  const cert = read(use, 'certificate', opts.certFile);
  const key = read(use, 'key', opts.keyFile);
  if ((cert === undefined) !== (key === undefined)) {
    throw use.error(
      cert === undefined
        ? `${use.label} key file ${opts.keyFile ?? ''} is set without a certificate file`
        : `${use.label} certificate file ${opts.certFile ?? ''} is set without a key file`,
    );
  }
  if (ca !== undefined) checkCaBundle(use, ca, opts.caFile ?? '');
  try {
    createSecureContext({ ca, cert, key });
  } catch (e) {
    // OpenSSL's reason (e.g. "key values mismatch", "no start line") never includes key material.
    const files = [opts.caFile, opts.certFile, opts.keyFile].filter((f) => f !== undefined && f !== '');
    throw use.error(`${use.label} files ${files.join(', ')} are not usable: ${(e as Error).message}`);
  }
  const loaded: LoadedTls = { rejectUnauthorized: opts.insecureSkipVerify !== true };
  if (ca !== undefined) loaded.ca = ca;
  if (cert !== undefined) loaded.cert = cert;
  if (key !== undefined) loaded.key = key;
  return loaded;
}
