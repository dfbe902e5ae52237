/**
 * Certificates made by openssl for the mutual-TLS callback tests: a CA with a server certificate for
 * 127.0.0.1 and a client certificate, and a second CA with its own client certificate.
 */
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export function haveOpenssl(): boolean {
  try {
    execFileSync('openssl', ['version'], { stdio: 'pipe' });
    return true;
  } catch {
    return false;
  }
}

export interface Pki {
  dir: string;
  file: (name: string) => string;
}

/** A CA, a server cert for 127.0.0.1, a client cert, and a second CA with its own client cert. */
export function makePki(): Pki {
  const dir = mkdtempSync(join(tmpdir(), 'callbacks-pki-'));
  const file = (name: string) => join(dir, name);
  const openssl = (...args: string[]) => execFileSync('openssl', args, { cwd: dir, stdio: 'pipe' });
  // Our own config, so the system openssl.cnf's defaults cannot change the extensions.
  writeFileSync(
    file('openssl.cnf'),
    [
      '[req]',
      'distinguished_name = dn',
      'prompt = no',
      '[dn]',
      'CN = unused',
      '[ca]',
      'basicConstraints = critical,CA:TRUE',
      'keyUsage = critical,keyCertSign,cRLSign',
      'subjectKeyIdentifier = hash',
      '[server]',
      'basicConstraints = CA:FALSE',
      'keyUsage = critical,digitalSignature',
      'extendedKeyUsage = serverAuth',
      'subjectAltName = IP:127.0.0.1,DNS:localhost',
      '[client]',
      'basicConstraints = CA:FALSE',
      'keyUsage = critical,digitalSignature',
      'extendedKeyUsage = clientAuth',
      '',
    ].join('\n'),
  );
  const key = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'];
  const ca = (name: string) =>
    openssl(
      'req',
      '-x509',
      ...key,
      '-keyout',
      `${name}.key`,
      '-out',
      `${name}.crt`,
      '-days',
      '2',
      '-subj',
      `/CN=${name}`,
      '-config',
      'openssl.cnf',
      '-extensions',
      'ca',
    );
  const leaf = (name: string, cn: string, signer: string, ext: string) => {
    openssl(
      'req',
      '-new',
      ...key,
      '-keyout',
      `${name}.key`,
      '-out',
      `${name}.csr`,
      '-subj',
      `/CN=${cn}`,
      '-config',
      'openssl.cnf',
    );
    openssl(
      'x509',
      '-req',
      '-in',
      `${name}.csr`,
      '-CA',
      `${signer}.crt`,
      '-CAkey',
      `${signer}.key`,
      '-set_serial',
      `0x${randomBytes(8).toString('hex')}`,
      '-days',
      '2',
      '-out',
      `${name}.crt`,
      '-extfile',
      'openssl.cnf',
      '-extensions',
      ext,
    );
  };
  ca('test-ca');
  ca('rogue-ca');
  leaf('server', '127.0.0.1', 'test-ca', 'server');
  leaf('client', 'opi-test-client', 'test-ca', 'client');
  leaf('rogue-client', 'rogue-client', 'rogue-ca', 'client');
  return { dir, file };
}
