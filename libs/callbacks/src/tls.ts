/** Client TLS for callbacks: CC's internal API usually wants mutual TLS with its own CA. */
import { X509Certificate } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createSecureContext } from 'node:tls';
import { CallbackTlsError } from './errors.js';

/** File paths as configured; an empty string counts as unset (env-style settings). */
export interface CallbackTls {
  /** PEM bundle of CAs to trust for CC's server certificate, instead of Node's built-in roots. */
  caFile?: string;
  /** PEM client certificate (chain) presented to CC; needs keyFile. */
  certFile?: string;
  /** PEM private key of certFile. */
  keyFile?: string;
  /** Skip verifying CC's certificate. For development only. */
  insecureSkipVerify?: boolean;
}

/** The files' contents, read once at start-up, ready for an https.Agent. */
export interface LoadedTls {
  ca?: Buffer;
  cert?: Buffer;
  key?: Buffer;
  rejectUnauthorized: boolean;
}

function read(what: string, file: string | undefined): Buffer | undefined {
  if (file === undefined || file === '') return undefined;
  try {
    return readFileSync(file);
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code ?? (e as Error).message;
    throw new CallbackTlsError(`cannot read callback TLS ${what} file ${file}: ${code}`, file);
  }
}

const PEM_CERT = /-----BEGIN CERTIFICATE-----[\s\S]*?-----END CERTIFICATE-----/g;

// createSecureContext silently ignores a CA file without certificates, which would only show later as
// every callback failing verification; so each block is parsed here.
function checkCaBundle(ca: Buffer, file: string): void {
  const blocks = ca.toString('utf8').match(PEM_CERT) ?? [];
  if (blocks.length === 0)
    throw new CallbackTlsError(`callback TLS CA file ${file} holds no PEM certificate`, file);
  for (const block of blocks) {
    try {
      new X509Certificate(block);
    } catch (e) {
      throw new CallbackTlsError(
        `callback TLS CA file ${file} holds an unusable certificate: ${(e as Error).message}`,
        file,
      );
    }
  }
}

/**
 * Reads the configured files and checks they form a usable identity now, so a bad key or a cert/key
 * mismatch stops the process at start-up instead of failing every callback later.
 */
export function loadTls(opts: CallbackTls): LoadedTls {
  const ca = read('CA', opts.caFile);
  const cert = read('certificate', opts.certFile);
  const key = read('key', opts.keyFile);
  if ((cert === undefined) !== (key === undefined)) {
    throw new CallbackTlsError(
      cert === undefined
        ? `callback TLS key file ${opts.keyFile ?? ''} is set without a certificate file`
        : `callback TLS certificate file ${opts.certFile ?? ''} is set without a key file`,
    );
  }
  if (ca !== undefined) checkCaBundle(ca, opts.caFile ?? '');
  try {
    createSecureContext({ ca, cert, key });
  } catch (e) {
    // OpenSSL's reason (e.g. "key values mismatch", "no start line") never includes key material.
    const files = [opts.caFile, opts.certFile, opts.keyFile].filter((f) => f !== undefined && f !== '');
    throw new CallbackTlsError(
      `callback TLS files ${files.join(', ')} are not usable: ${(e as Error).message}`,
    );
  }
  const loaded: LoadedTls = { rejectUnauthorized: opts.insecureSkipVerify !== true };
  if (ca !== undefined) loaded.ca = ca;
  if (cert !== undefined) loaded.cert = cert;
  if (key !== undefined) loaded.key = key;
  return loaded;
}
