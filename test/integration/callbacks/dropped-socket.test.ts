/**
 * CallbackClient and a kept-alive socket the server dropped: the call is retried once on a fresh
 * connection.
 */
import { createServer } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { CallbackClient } from '@opi/callbacks';

describe('CallbackClient and a kept-alive socket the server dropped', () => {
  // A server that serves one request per connection and then resets it on the next one, as a proxy
  // closing an idle connection at the moment the client reuses it would.
  const served = new WeakMap<Socket, number>();
  let requests = 0;
  const server = createServer((req, res) => {
    requests += 1;
    const n = (served.get(req.socket) ?? 0) + 1;
    served.set(req.socket, n);
    if (n > 1) {
      req.socket.destroy();
      return;
    }
    req.resume();
    req.on('end', () => res.end('{}'));
  });
  let base = '';
  beforeAll(async () => {
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  });

  it('is retried once on a fresh connection', async () => {
    const client = new CallbackClient({ timeoutMs: 2_000 });
    try {
      await expect(client.postJson(`${base}/a`, {})).resolves.toMatchObject({ kind: 'delivered' });
      await expect(client.postJson(`${base}/b`, {})).resolves.toMatchObject({ kind: 'delivered' });
      expect(requests).toBe(3);
    } finally {
      client.close();
    }
  });
});
