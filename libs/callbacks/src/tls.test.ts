/** loadTls's start-up checks that need no real certificates (those are in test/integration/callbacks). */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from '@jest/globals';
import { CallbackTlsError } from './errors.js';
import { loadTls } from './tls.js';

const dir = mkdtempSync(join(tmpdir(), 'callbacks-tls-'));
const garbage = join(dir, 'garbage.pem');
writeFileSync(garbage, 'not a pem\n');
const broken = join(dir, 'broken.pem');
writeFileSync(broken, '-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n');
afterAll(() => {
  rmSync(dir, { recursive: true, force: true });
});

describe('loadTls', () => {
  it.each([
    [{}, { rejectUnauthorized: true }],
    [{ caFile: '', certFile: '', keyFile: '' }, { rejectUnauthorized: true }],
    [{ insecureSkipVerify: true }, { rejectUnauthorized: false }],
  ])('%j loads nothing', (opts, expected) => {
    expect(loadTls(opts)).toStrictEqual(expected);
  });

  it.each<[string, object, string, RegExp]>([
    [
      'missing CA',
      { caFile: join(dir, 'nope-ca.pem') },
      'nope-ca.pem',
      /cannot read callback TLS CA file .*nope-ca\.pem: ENOENT/,
    ],
    [
      'missing cert',
      { certFile: join(dir, 'nope.crt'), keyFile: garbage },
      'nope.crt',
      /cannot read callback TLS certificate file .*nope\.crt: ENOENT/,
    ],
    [
      'a directory as key',
      { certFile: garbage, keyFile: dir },
      dir,
      /cannot read callback TLS key file .*: EISDIR/,
    ],
    [
      'cert without key',
      { certFile: garbage },
      garbage,
      /certificate file .*garbage\.pem is set without a key file/,
    ],
    [
      'key without cert',
      { keyFile: garbage },
      garbage,
      /key file .*garbage\.pem is set without a certificate file/,
    ],
    [
      'CA file without certificates',
      { caFile: garbage },
      garbage,
      /CA file .*garbage\.pem holds no PEM certificate/,
    ],
    [
      'CA file with a broken certificate',
      { caFile: broken },
      broken,
      /CA file .*broken\.pem holds an unusable certificate/,
    ],
    [
      'unparseable cert and key',
      { certFile: garbage, keyFile: garbage },
      garbage,
      /garbage\.pem.* are not usable/,
    ],
  ])('%s: names the file', (_name, opts, file, message) => {
    expect(() => loadTls(opts)).toThrow(CallbackTlsError);
    expect(() => loadTls(opts)).toThrow(message);
    expect(() => loadTls(opts)).toThrow(file);
  });
});
