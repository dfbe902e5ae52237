import { describe, expect, it } from '@jest/globals';
import { SettingsError, parseSettings } from './settings.js';

describe('Loggregator and log agent settings', () => {
  it('are off without an address, with the node defaults', () => {
    const s = parseSettings({});
    expect(s.loggregator).toBeUndefined();
    expect(s.nodeLogs).toEqual({
      nodeName: undefined,
      dir: '/var/log/pods',
      positionsFile: '/var/lib/opi-log-agent/positions.json',
    });
  });

  it('read the address, the mutual TLS files and the server name (metron by default)', () => {
    const s = parseSettings({
      OPI_LOGGREGATOR_ADDR: '127.0.0.1:3458',
      OPI_LOGGREGATOR_CA_FILE: '/ca.pem',
      OPI_LOGGREGATOR_CERT_FILE: '/cert.pem',
      OPI_LOGGREGATOR_KEY_FILE: '/key.pem',
    });
    expect(s.loggregator).toEqual({
      address: { host: '127.0.0.1', port: 3458 },
      tls: { caFile: '/ca.pem', certFile: '/cert.pem', keyFile: '/key.pem' },
      serverName: 'metron',
      maxBuffered: 10_000,
    });
  });

  it.each([
    [{ OPI_LOGGREGATOR_ADDR: 'doppler' }, /OPI_LOGGREGATOR_ADDR: "doppler" is not host:port/],
    [{ OPI_LOGGREGATOR_ADDR: 'a:1,b:2' }, /OPI_LOGGREGATOR_ADDR takes one host:port/],
    [
      { OPI_LOGGREGATOR_ADDR: 'a:1', OPI_LOGGREGATOR_CERT_FILE: '/c.pem' },
      /OPI_LOGGREGATOR_CERT_FILE.*OPI_LOGGREGATOR_KEY_FILE/,
    ],
  ])('refuse %j', (env, message) => {
    expect(() => parseSettings(env)).toThrow(SettingsError);
    expect(() => parseSettings(env)).toThrow(message);
  });
});
