import { describe, expect, it, jest } from '@jest/globals';
import { FakeNats } from './nats.fixture.js';
import { UNREGISTER } from './route-emitter.js';
import { UNROUTE_FLUSH_MS, natsUnroute } from './unroute.js';

const message = (host: string) => JSON.stringify({ host, port: 8080, uris: ['hello.example.com'] });

describe('natsUnroute', () => {
  it('publishes each unregister and counts it', async () => {
    const nats = new FakeNats();
    const inc = jest.fn();
    await natsUnroute(nats, { routingMessages: { inc } as never })([
      message('127.9.0.1'),
      message('127.9.0.2'),
    ]);
    expect(nats.take().map((s) => [s.subject, s.m.host])).toEqual([
      [UNREGISTER, '127.9.0.1'],
      [UNREGISTER, '127.9.0.2'],
    ]);
    expect(inc).toHaveBeenCalledTimes(2);
  });

  it('sends nothing while NATS is away: the emitter forgets the instance once the pod terminates', async () => {
    const nats = new FakeNats();
    nats.up = false;
    await natsUnroute(nats)([message('127.9.0.1')]);
    expect(nats.take()).toEqual([]);
  });

  it('waits for a flush that never answers only so long, so a stop is never held', async () => {
    jest.useFakeTimers();
    try {
      const nats = new FakeNats();
      nats.flushHangs = true;
      let done = false;
      const sending = natsUnroute(nats)([message('127.9.0.1')]).then(() => (done = true));
      await jest.advanceTimersByTimeAsync(UNROUTE_FLUSH_MS - 1);
      expect(done).toBe(false);
      await jest.advanceTimersByTimeAsync(1);
      await sending;
      expect(nats.take()).toHaveLength(1);
    } finally {
      jest.useRealTimers();
    }
  });
});
