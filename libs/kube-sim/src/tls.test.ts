import { describe, expect, it } from '@jest/globals';
import { X509Certificate } from 'node:crypto';
import { createSecureContext } from 'node:tls';
import { selfSignedCertificate } from './tls.js';

describe('selfSignedCertificate', () => {
  // The serial and signature are random: build many, so an encoding that only some values break shows.
  it('is valid DER that Node parses and serves, every time', () => {
    for (let i = 0; i < 2000; i++) {
      const { cert, key } = selfSignedCertificate();
      const x509 = new X509Certificate(cert);
      expect(x509.subjectAltName).toContain('IP Address:127.0.0.1');
      expect(() => createSecureContext({ cert, key })).not.toThrow();
    }
  });
});
