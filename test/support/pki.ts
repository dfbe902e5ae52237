/**
 * Certificates made by openssl for every mutual-TLS test, the API's and the callbacks' (a CA, a server
 * certificate for 127.0.0.1, client certificates of that CA, one of another CA and an expired one), and an
 * HTTPS request presenting them.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { request as httpsRequest } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export interface Pki {
  dir: string;
  ca: Buffer;
  file(name: string): string;
  read(name: string): Buffer;
}

/** Whether openssl is on the PATH (the tests that need certificates are skipped without it). */
export function haveOpenssl(): boolean {
  try {
    execFileSync('openssl', ['version'], { stdio: 'pipe' });
    return true;
  } catch {
    return false;
  }
}

/**
 * A CA (`ca`) and its server certificate for 127.0.0.1 (`server`); client certificates of it: CC's
 * (`cloud-controller`, `cloud-controller-2`), the workers' towards CC (`opi-worker`), an expired one
 * (`expired`); and one of another CA (`other-ca`): `intruder`.
 */
export function makePki(): Pki {
  const dir = mkdtempSync(join(tmpdir(), 'opi-mtls-'));
  const file = (n: string): string => join(dir, n);
  const ssl = (...args: string[]): void => {
    execFileSync('openssl', args, { cwd: dir, stdio: 'pipe' });
  };
  const ec = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'];
  writeFileSync(
    file('server.ext'),
    'subjectAltName=IP:127.0.0.1,DNS:localhost,DNS:metron\nextendedKeyUsage=serverAuth\n',
  );
  writeFileSync(file('client.ext'), 'extendedKeyUsage=clientAuth\n');
  for (const ca of ['ca', 'other-ca']) {
    ssl(
      'req',
      '-x509',
      ...ec,
      '-keyout',
      `${ca}.key`,
      '-out',
      `${ca}.crt`,
      '-subj',
      `/CN=${ca}`,
      '-days',
      '2',
    );
  }
  const sign = (name: string, ca: string, ext: string, days = '2'): void => {
    ssl('req', ...ec, '-keyout', `${name}.key`, '-out', `${name}.csr`, '-subj', `/CN=${name}`);
    ssl(
      'x509',
      '-req',
      '-in',
      `${name}.csr`,
      '-CA',
      `${ca}.crt`,
      '-CAkey',
      `${ca}.key`,
      '-CAcreateserial',
      '-out',
      `${name}.crt`,
      '-days',
      days,
      '-extfile',
      ext,
    );
  };
  sign('server', 'ca', 'server.ext');
  sign('cloud-controller', 'ca', 'client.ext');
  sign('cloud-controller-2', 'ca', 'client.ext');
  sign('opi-worker', 'ca', 'client.ext');
  sign('intruder', 'other-ca', 'client.ext');
  // Signed by the right CA, but its notAfter is a day before its notBefore: expired from the start.
  sign('expired', 'ca', 'client.ext', '-1');
  const read = (n: string): Buffer => readFileSync(file(n));
  return { dir, ca: read('ca.crt'), file, read };
}

export function httpsGet(
  port: number,
  path: string,
  tls: { ca: Buffer; cert?: Buffer; key?: Buffer },
  send: { method?: string; body?: string; headers?: Record<string, string> } = {},
): Promise<{ status: number; text: string }> {
  return new Promise((resolve, reject) => {
    const req = httpsRequest(
      {
        host: '127.0.0.1',
        port,
        path,
        method: send.method ?? 'GET',
        headers: send.headers ?? {},
        agent: false,
        ...tls,
      },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => (text += c));
        res.on('end', () => {
          resolve({ status: res.statusCode ?? 0, text });
        });
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.end(send.body);
  });
}
