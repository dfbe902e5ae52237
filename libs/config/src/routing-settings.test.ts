import { describe, expect, it } from '@jest/globals';
import { SettingsError, parseSettings } from './settings.js';

describe('routing settings', () => {
  it('are off by default', () => {
    expect(parseSettings({}).routing).toEqual({ mode: 'off' });
  });

  it('read several NATS servers, credentials apart from the address', () => {
    const s = parseSettings({
      OPI_ROUTING: 'nats',
      OPI_NATS_URL: 'nats://nats:s%40cret@10.0.0.1:4222, nats://nats-1.internal',
    });
    expect(s.routing).toEqual({
      mode: 'nats',
      servers: [
        { server: '10.0.0.1:4222', user: 'nats', pass: 's@cret' },
        { server: 'nats-1.internal:4222' },
      ],
      tls: undefined,
    });
  });

  it('read the TLS files', () => {
    const s = parseSettings({
      OPI_ROUTING: 'nats',
      OPI_NATS_URL: 'nats://127.0.0.1:4222',
      OPI_NATS_TLS_CA_FILE: '/ca.pem',
      OPI_NATS_TLS_CERT_FILE: '/cert.pem',
      OPI_NATS_TLS_KEY_FILE: '/key.pem',
    });
    expect(s.routing).toMatchObject({
      tls: { caFile: '/ca.pem', certFile: '/cert.pem', keyFile: '/key.pem' },
    });
  });

  it.each([
    [{ OPI_ROUTING: 'nats' }, /OPI_ROUTING=nats needs OPI_NATS_URL/],
    [{ OPI_ROUTING: 'gorouter' }, /OPI_ROUTING/],
    [
      { OPI_ROUTING: 'nats', OPI_NATS_URL: 'nats://a:1', OPI_NATS_TLS_CERT_FILE: '/c' },
      /OPI_NATS_TLS_CERT_FILE and OPI_NATS_TLS_KEY_FILE must be set together/,
    ],
  ])('refuse %j, naming what is wrong', (env, message) => {
    expect(() => parseSettings(env)).toThrow(SettingsError);
    expect(() => parseSettings(env)).toThrow(message);
  });

  it.each(['http://127.0.0.1:4222', 'nats://@', '127.0.0.1:4222', 'nats://u:p@h:4222/x'])(
    'refuse the server %s without echoing it',
    (url) => {
      const run = () => parseSettings({ OPI_ROUTING: 'nats', OPI_NATS_URL: `nats://ok:1,${url}` });
      expect(run).toThrow(/OPI_NATS_URL: server 2 is not nats:\/\/\[user:pass@\]host:port/);
      try {
        run();
      } catch (e) {
        expect((e as Error).message).not.toContain(url);
      }
    },
  );
});
