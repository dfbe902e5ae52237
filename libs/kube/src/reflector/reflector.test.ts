/** The reflector's loop: the first list, watching and re-watching, back-off on errors, stop. */
import { afterEach, describe, expect, it } from '@jest/globals';
import { Backoff } from './backoff.js';
import { KubeApiError } from '../port/errors.js';
import {
  flush,
  Harness,
  pod,
  ScriptedPort,
  stopAfterTest,
  stopHarnesses,
  unavailable,
  until,
} from './reflector.fixture.js';
import { abortableSleep, Reflector, type HeldVersion } from './reflector.js';

afterEach(stopHarnesses);

describe('Reflector: the first list', () => {
  it('lists the kind with the selector, upserts every object, then reports synced and watches', async () => {
    const h = new Harness();
    expect(h.reflector.state).toBe('stopped');
    h.reflector.start();
    const list = await h.list(1);
    expect(list).toMatchObject({ resource: 'pods', namespace: 'ns', labelSelector: 'app=x' });
    expect(list.pageSize).toBeUndefined(); // the port's default, 500
    expect(h.reflector.state).toBe('listing');
    expect(h.reflector.hasSynced).toBe(false);

    list.respond([pod('a', '3'), pod('b', '5'), pod('c', '7')], '10');
    await h.reflector.synced;
    expect(h.log).toEqual(['upsert ns/a 3', 'upsert ns/b 5', 'upsert ns/c 7', 'synced start']);
    expect(h.reflector.hasSynced).toBe(true);
    expect(h.reflector.size).toBe(3);
    expect(h.reflector.get('ns/b')).toEqual({ phase: 'Running', rv: 5 });
    expect([...h.reflector.entries()].map(([k]) => k)).toEqual(['ns/a', 'ns/b', 'ns/c']);
    expect([...h.reflector.values()].map((v) => v.rv)).toEqual([3, 5, 7]);
    expect(h.reflector.resourceVersion).toBe('10');
    expect(h.reflector.lastSyncedAt).toBe(h.clock);
    expect(h.relists).toEqual([{ reason: 'start', upserted: 3, deleted: 0, detail: undefined }]);

    const w = await h.watch(1);
    expect(w.resource).toBe('pods');
    expect(w.namespace).toBe('ns');
    expect(w.options).toEqual({
      labelSelector: 'app=x',
      resourceVersion: '10',
      allowWatchBookmarks: true,
      timeoutSeconds: 300,
      deadlineMs: 330_000,
    });
    expect(h.reflector.state).toBe('watching');
    expect(h.reflector.watchingSince).toBe(h.clock);
    expect(h.states).toEqual(['listing', 'watching']);
  });

  it('passes the page size and lists the kind it reflects', async () => {
    const port = new ScriptedPort();
    const r = new Reflector({
      kube: port,
      resource: 'jobs',
      namespace: undefined,
      project: (j, rv) => ({ name: j.metadata.name, rv }),
      pageSize: 100,
    });
    r.start();
    await until('a list', () => port.lists.length === 1);
    expect(port.lists[0]).toMatchObject({ resource: 'jobs', namespace: undefined, pageSize: 100 });
    port.lists[0]!.respond([], '1');
    await until('a watch', () => port.watches.length === 1);
    expect(port.watches[0]!.resource).toBe('jobs');
    await r.stop();
  });

  it('retries a failed first list with the same back-off, then syncs', async () => {
    const h = new Harness();
    h.reflector.start();
    (await h.list(1)).fail(unavailable());
    (await h.list(2)).fail(unavailable());
    (await h.list(3)).respond([pod('a', '1')], '4');
    await h.reflector.synced;
    await h.watch(1);
    expect(h.sleeps).toEqual([800, 1600]);
    expect(h.errors.map((e) => [e.source, e.retryInMs])).toEqual([
      ['list', 800],
      ['list', 1600],
    ]);
    expect(h.states).toEqual(['listing', 'backoff', 'listing', 'backoff', 'listing', 'watching']);
    expect(h.log).toEqual(['upsert ns/a 1', 'synced start']);
  });
});

describe('Reflector: watching', () => {
  it('applies ADDED, MODIFIED and DELETED in order and tracks the resourceVersion', async () => {
    const h = new Harness();
    const w = await h.started([pod('a', '3')]);
    h.clock += 5000;
    w.emit({ type: 'ADDED', object: pod('b', '11') });
    w.emit({ type: 'MODIFIED', object: pod('a', '12', 'Pending') });
    w.emit({ type: 'DELETED', object: pod('b', '13') });
    w.emit({ type: 'DELETED', object: pod('never-seen', '14') });
    expect(h.log).toEqual(['upsert ns/b 11', 'upsert ns/a 12 (was 3)', 'delete ns/b (was 11)']);
    expect(h.reflector.get('ns/a')).toEqual({ phase: 'Pending', rv: 12 });
    expect(h.reflector.size).toBe(1);
    expect(h.reflector.resourceVersion).toBe('14');
    expect(h.reflector.lastEventAt).toBe(h.clock);
    expect(h.events).toEqual(['ADDED', 'MODIFIED', 'DELETED', 'DELETED']);
  });

  it('resumes from the last resourceVersion, bookmarks included, after a normal end', async () => {
    const h = new Harness();
    const w1 = await h.started([pod('a', '3')]);
    w1.emit({ type: 'MODIFIED', object: pod('a', '11', 'Pending') });
    h.clock += 60_000;
    w1.emit({ type: 'BOOKMARK', object: { metadata: { resourceVersion: '15' } } });
    expect(h.reflector.lastEventAt).toBe(h.clock);
    w1.end();
    const w2 = await h.watch(2);
    expect(w2.options.resourceVersion).toBe('15');
    expect(h.restarts).toEqual(['closed']);
    expect(h.port.lists).toHaveLength(1);
    expect(h.sleeps).toEqual([]);

    // A close at the server's timeoutSeconds is a timeout; still no list and no back-off.
    h.clock += (w2.options.timeoutSeconds ?? 0) * 1000;
    w2.end();
    const w3 = await h.watch(3);
    expect(w3.options.resourceVersion).toBe('15');
    expect(h.restarts).toEqual(['closed', 'timeout']);
    expect(h.port.lists).toHaveLength(1);
    expect(h.sleeps).toEqual([]);
  });

  it('draws timeoutSeconds in [300, 600] and sets the deadline 30 s past it', async () => {
    const h = new Harness();
    h.rand = 0.9999;
    const w1 = await h.started([]);
    expect(w1.options.timeoutSeconds).toBe(600);
    expect(w1.options.deadlineMs).toBe(630_000);
    h.rand = 0.5;
    h.clock += 600_000;
    w1.end();
    const w2 = await h.watch(2);
    expect(w2.options.timeoutSeconds).toBe(450);
    expect(w2.options.deadlineMs).toBe(480_000);
  });

  it('takes the client deadline as a timeout: re-watches at once from the last version', async () => {
    const h = new Harness();
    const w1 = await h.started([pod('a', '3')]);
    h.clock += (w1.options.deadlineMs ?? 0) + 1;
    w1.fail(
      new KubeApiError({ status: undefined, reason: 'Timeout', message: 'watch cut', transient: true }),
    );
    const w2 = await h.watch(2);
    expect(w2.options.resourceVersion).toBe('10');
    expect(h.restarts).toEqual(['timeout']);
    expect(h.sleeps).toEqual([]);
    expect(h.errors).toEqual([]);
  });

  it('backs off when a watch closes at once having delivered nothing', async () => {
    const h = new Harness();
    const w1 = await h.started([]);
    w1.end();
    await h.watch(2);
    expect(h.restarts).toEqual(['closed']);
    expect(h.sleeps).toEqual([800]);
  });
});

describe('Reflector: other errors', () => {
  it('backs off 0.8 s doubling to 30 s, re-watching from the same version, reset after 2 min healthy', async () => {
    const h = new Harness();
    let w = await h.started([pod('a', '1')]);
    for (let i = 2; i <= 10; i++) {
      if (i % 2) w.fail(unavailable());
      else w.emit({ type: 'ERROR', object: { kind: 'Status', code: 500, reason: 'InternalError' } });
      w = await h.watch(i);
      expect(w.options.resourceVersion).toBe('10');
    }
    expect(h.sleeps).toEqual([800, 1600, 3200, 6400, 12_800, 25_600, 30_000, 30_000, 30_000]);
    expect(h.port.lists).toHaveLength(1);
    expect(h.restarts.every((r) => r === 'error')).toBe(true);
    expect(h.errors.every((e) => e.source === 'watch' && e.error instanceof KubeApiError)).toBe(true);
    expect(h.errors.map((e) => (e.error as KubeApiError).status)).toEqual([
      500, 503, 500, 503, 500, 503, 500, 503, 500,
    ]);

    // A watch that ran healthy for 2 minutes resets the back-off.
    h.clock += 120_000;
    w.fail(unavailable());
    w = await h.watch(11);
    expect(h.sleeps.at(-1)).toBe(800);
    // A short one does not.
    h.clock += 1000;
    w.fail(unavailable());
    await h.watch(12);
    expect(h.sleeps.at(-1)).toBe(1600);
  });

  it('jitters each delay within [base, 1.5 × base)', async () => {
    const h = new Harness();
    h.rand = 0.999999;
    let w = await h.started([]);
    for (let i = 2; i <= 9; i++) {
      w.fail(unavailable());
      w = await h.watch(i);
    }
    const bases = [800, 1600, 3200, 6400, 12_800, 25_600, 30_000, 30_000];
    h.sleeps.forEach((ms, i) => {
      expect(ms).toBeGreaterThanOrEqual(bases[i]!);
      expect(ms).toBeLessThan(bases[i]! * 1.5);
      expect(ms).toBeGreaterThan(bases[i]! * 1.49);
    });
    const b = new Backoff({}, () => 0.25);
    expect(b.next()).toBe(900);
    expect(b.next()).toBe(1800);
  });

  it('never waits less than a Retry-After, up to the cap', async () => {
    const h = new Harness();
    const w = await h.started([]);
    w.fail(unavailable(5));
    const w2 = await h.watch(2);
    w2.fail(unavailable(3600));
    await h.watch(3);
    expect(h.sleeps).toEqual([5000, 30_000]);
  });

  it('keeps retrying permanent errors such as 403, and reports them as permanent', async () => {
    const h = new Harness();
    const forbidden = new KubeApiError({
      status: 403,
      reason: 'Forbidden',
      message: 'pods is forbidden',
      transient: false,
    });
    let w = await h.started([]);
    for (let i = 2; i <= 5; i++) {
      w.fail(forbidden);
      w = await h.watch(i);
    }
    h.reflector.start(); // a second start is ignored
    expect(h.errors).toHaveLength(4);
    expect(h.errors.every((e) => !(e.error as KubeApiError).transient)).toBe(true);
    w.emit({ type: 'ADDED', object: pod('x', '50') });
    expect(h.reflector.get('ns/x')).toBeDefined();
  });

  it('goes on after a handler or the projection throws, and reports them', async () => {
    const h = new Harness();
    const seen: string[] = [];
    const r = new Reflector<'pods', { rv: HeldVersion }>({
      kube: h.port,
      resource: 'pods',
      namespace: 'ns',
      project: (p, rv) => {
        if (p.metadata.name === 'bad') throw new Error('cannot project');
        return { rv };
      },
      handler: {
        onUpsert: (key) => {
          seen.push(key);
          if (key === 'ns/a') throw new Error('handler failed');
        },
        onSynced: () => {
          throw new Error('synced failed');
        },
      },
      observer: {
        onError: (e, info) => h.errors.push({ error: e, source: info.source }),
        onEvent: () => {
          throw new Error('observers may fail too');
        },
      },
      sleep: () => Promise.resolve(),
    });
    stopAfterTest(r);
    r.start();
    (await h.list(1)).respond([pod('a', '1'), pod('bad', '2'), pod('b', '3')], '10');
    await r.synced;
    const w = await h.watch(1);
    w.emit({ type: 'ADDED', object: pod('c', '11') });
    w.emit({ type: 'MODIFIED', object: pod('a', '12') });
    expect(w.stopped).toBe(false);
    expect(seen).toEqual(['ns/a', 'ns/b', 'ns/c', 'ns/a']);
    expect(r.get('ns/a')).toEqual({ rv: 12 });
    expect(r.get('ns/bad')).toBeUndefined();
    expect(h.errors.map((e) => e.source)).toEqual(['project', 'handler', 'handler', 'handler']);
    expect(r.state).toBe('watching');
  });
});

describe('Reflector: stop', () => {
  it('ends the watch, waits for the loop and calls no handler after', async () => {
    const h = new Harness();
    const w = await h.started([pod('a', '1')]);
    await h.reflector.stop();
    expect(w.stopped).toBe(true);
    expect(h.reflector.state).toBe('stopped');
    expect(h.reflector.watchingSince).toBeUndefined();
    expect(h.states.at(-1)).toBe('stopped');
    await flush();
    expect(h.port.watches).toHaveLength(1);
    expect(() => {
      h.reflector.start();
    }).toThrow(/cannot start again/);
    await h.reflector.stop(); // twice is fine
  });

  it('does not wait for a list in flight, drops its answer, and rejects `synced` if the first list never landed', async () => {
    const h = new Harness();
    h.reflector.start();
    const list = await h.list(1);
    await h.reflector.stop();
    list.respond([pod('a', '1')], '10');
    await flush();
    await expect(h.reflector.synced).rejects.toThrow(/stopped before its first list/);
    expect(h.log).toEqual([]);
    expect(h.reflector.size).toBe(0);
    expect(h.port.watches).toHaveLength(0);
  });

  it('cuts a back-off short and leaves no timer behind (real sleep)', async () => {
    // The sleep is the real one, watched: which timers it set and cleared, and whether the stop ended it.
    // (Counting the process's active timers instead is racy: jest and other suites hold timers too.)
    const set = new Set<unknown>();
    const cleared = new Set<unknown>();
    const realSet = globalThis.setTimeout;
    const realClear = globalThis.clearTimeout;
    const slept: { ms: number; endedByStop?: boolean }[] = [];
    const sleep = async (ms: number, signal: AbortSignal): Promise<void> => {
      const spied = { setTimeout: realSet, clearTimeout: realClear };
      globalThis.setTimeout = ((fn: () => void, t: number) => {
        const h = spied.setTimeout(fn, t);
        set.add(h);
        return h;
      }) as typeof setTimeout;
      globalThis.clearTimeout = (h: Parameters<typeof clearTimeout>[0]) => {
        cleared.add(h);
        spied.clearTimeout(h);
      };
      const entry: { ms: number; endedByStop?: boolean } = { ms };
      slept.push(entry);
      try {
        await abortableSleep(ms, signal);
      } finally {
        globalThis.setTimeout = realSet;
        globalThis.clearTimeout = realClear;
      }
      entry.endedByStop = signal.aborted;
    };
    const port = new ScriptedPort();
    const r = new Reflector({
      kube: port,
      resource: 'pods',
      namespace: 'ns',
      project: (_p, rv) => ({ rv }),
      sleep,
    });
    r.start();
    await until('a list', () => port.lists.length === 1);
    port.lists[0]!.fail(unavailable());
    await until('the back-off', () => r.state === 'backoff');
    expect(slept).toHaveLength(1);
    expect(slept[0]!.ms).toBeGreaterThan(0);
    expect(set.size).toBe(1);
    await r.stop();
    expect(slept[0]!.endedByStop).toBe(true);
    expect(r.state).toBe('stopped');
    expect([...set].every((h) => cleared.has(h))).toBe(true);
    expect(port.lists).toHaveLength(1);
  });
});
