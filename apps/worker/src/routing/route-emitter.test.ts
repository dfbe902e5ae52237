import { afterEach, beforeEach, describe, expect, it, jest } from '@jest/globals';
import type { Logger } from '@opi/logging';
import type { RouteSource } from '@opi/translation';
import { FakeNats } from './nats.fixture.js';
import { DEFAULT_INTERVAL_S, RouteEmitter } from './route-emitter.js';

const logger = { info: () => undefined, warn: () => undefined, error: () => undefined } as unknown as Logger;
const source: RouteSource = {
  ports: [[8080, ['hello.example.com']]],
  desired: 2,
  app: 'app-guid',
  tags: { component: 'route-emitter', source_id: 'app-guid' },
};
const inst = (n: number) => ({ ip: `127.9.0.${n + 1}`, uid: `uid-${n}`, index: n });

let nats: FakeNats;
let leading: boolean;
let emitter: RouteEmitter;

beforeEach(() => {
  jest.useFakeTimers();
  nats = new FakeNats();
  leading = true;
  emitter = new RouteEmitter({ nats, leading: () => leading, logger, random: () => 0.5 });
});
afterEach(() => {
  emitter.stop();
  jest.useRealTimers();
});

describe('RouteEmitter changes', () => {
  it('registers new Ready instances at once, nothing for a repeat, unregisters a gone one', () => {
    emitter.lrpRouted('pg', source, [inst(0), inst(1)]);
    expect(nats.take().map((s) => [s.subject, s.m.host])).toEqual([
      ['router.register', '127.9.0.1'],
      ['router.register', '127.9.0.2'],
    ]);
    emitter.lrpRouted('pg', source, [inst(0), inst(1)]);
    expect(nats.take()).toEqual([]);
    emitter.lrpRouted('pg', source, [inst(1)]);
    expect(nats.take().map((s) => [s.subject, s.m.host])).toEqual([['router.unregister', '127.9.0.1']]);
    expect(emitter.size).toBe(1);
  });

  it('unregisters every instance when the LRP loses its routes or its workload', () => {
    emitter.lrpRouted('pg', source, [inst(0), inst(1)]);
    nats.take();
    emitter.lrpRouted('pg', undefined, []);
    expect(nats.take().map((s) => s.subject)).toEqual(['router.unregister', 'router.unregister']);
    expect(emitter.size).toBe(0);
  });

  it('publishes nothing once the Lease may be another’s', () => {
    leading = false;
    emitter.lrpRouted('pg', source, [inst(0)]);
    expect(nats.take()).toEqual([]);
  });
});

describe('RouteEmitter heartbeat', () => {
  it("sends every registration once per interval, spread, at the gorouter's interval from router.greet", async () => {
    nats.greetReplies = [JSON.stringify({ id: 'r1', minimumRegisterIntervalInSeconds: 5 })];
    emitter.start();
    await jest.advanceTimersByTimeAsync(1100);
    expect(emitter.registerIntervalS).toBe(5);
    const pods = Array.from({ length: 10 }, (_, i) => inst(i));
    emitter.lrpRouted('pg', source, pods);
    nats.take();
    await jest.advanceTimersByTimeAsync(1000);
    // A fifth of them per second.
    expect(nats.take()).toHaveLength(2);
    await jest.advanceTimersByTimeAsync(4000);
    const round = nats.take().map((s) => s.m.host);
    expect(new Set(round).size).toBe(8);
    await jest.advanceTimersByTimeAsync(6000);
    // Every one again within the next interval (plus one step).
    expect(new Set(nats.take().map((s) => s.m.host)).size).toBe(10);
  });

  it('never sends again a registration removed meanwhile', async () => {
    emitter.start();
    emitter.lrpRouted('pg', source, [inst(0), inst(1), inst(2)]);
    await jest.advanceTimersByTimeAsync(1000);
    emitter.lrpRouted('pg', source, [inst(2)]);
    nats.take();
    await jest.advanceTimersByTimeAsync(3 * DEFAULT_INTERVAL_S * 1000);
    const hosts = new Set(nats.take().map((s) => s.m.host));
    expect([...hosts]).toEqual(['127.9.0.3']);
  });

  it('defaults to 20 s when no gorouter answers, and sends nothing while NATS is down', async () => {
    emitter.start();
    emitter.lrpRouted('pg', source, [inst(0)]);
    nats.take();
    nats.up = false;
    await jest.advanceTimersByTimeAsync(40_000);
    expect(emitter.registerIntervalS).toBe(DEFAULT_INTERVAL_S);
    expect(nats.take()).toEqual([]);
  });
});

describe('RouteEmitter full emissions', () => {
  it('sends everything within a second of router.start, and adopts its interval', async () => {
    emitter.start();
    emitter.lrpRouted('a', source, [inst(0), inst(1)]);
    emitter.lrpRouted('b', { ...source, app: 'other' }, [inst(5)]);
    nats.take();
    nats.routerStart(3);
    await jest.advanceTimersByTimeAsync(999);
    const sent = nats.take();
    expect(sent.filter((s) => s.subject === 'router.register').map((s) => s.m.host)).toEqual(
      expect.arrayContaining(['127.9.0.1', '127.9.0.2', '127.9.0.6']),
    );
    expect(emitter.registerIntervalS).toBe(3);
  });

  it('sends everything after its own reconnect', async () => {
    emitter.start();
    emitter.lrpRouted('a', source, [inst(0), inst(1)]);
    nats.take();
    nats.reconnect();
    await jest.advanceTimersByTimeAsync(999);
    expect(new Set(nats.take().map((s) => s.m.host))).toEqual(new Set(['127.9.0.1', '127.9.0.2']));
  });

  it('sends nothing once stopped', async () => {
    emitter.start();
    emitter.lrpRouted('a', source, [inst(0)]);
    nats.take();
    emitter.stop();
    nats.routerStart(1);
    await jest.advanceTimersByTimeAsync(5000);
    expect(nats.take()).toEqual([]);
  });
});
