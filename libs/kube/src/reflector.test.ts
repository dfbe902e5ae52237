import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { afterEach, describe, expect, it } from '@jest/globals';
import { Backoff } from './backoff.js';
import { KubeApiError } from './errors.js';
import type { Pod, Stored } from './objects.js';
import type {
  ListResult,
  Select,
  WatchEvent,
  WatchHandle,
  WatchOptions,
  Watched,
  WatchedResource,
} from './port.js';
import {
  abortableSleep,
  type HeldVersion,
  Reflector,
  type ReflectorObserver,
  type ReflectorBaseOptions,
  type ReflectorPort,
  type ReflectorState,
  type SyncReason,
} from './reflector.js';

// --- a scripted port: each list and watch waits for the test to answer it -----------------------------

interface ListRequest {
  resource: WatchedResource;
  namespace: string | undefined;
  labelSelector: string | undefined;
  pageSize: number | undefined;
  respond(objects: Stored<Pod>[], resourceVersion: string): void;
  fail(error: unknown): void;
}

interface FakeWatch {
  resource: WatchedResource;
  namespace: string | undefined;
  options: WatchOptions;
  stopped: boolean;
  emit(event: WatchEvent<Stored<Pod>>): void;
  /** The server closes the stream. */
  end(): void;
  /** The request fails (`done` rejects). */
  fail(error: Error): void;
}

class ScriptedPort implements ReflectorPort {
  readonly lists: ListRequest[] = [];
  /** Every list's answer, weakly: a reflector must not keep them. */
  readonly answers: WeakRef<object>[] = [];
  readonly watches: FakeWatch[] = [];

  listDeployments<U>(
    namespace: string | undefined,
    labelSelector?: string,
    pageSize?: number,
    select?: Select<Watched['deployments'], U>,
  ): Promise<ListResult<U>> {
    return this.list('deployments', namespace, labelSelector, pageSize, select as Select<unknown, U>);
  }
  listStatefulSets<U>(
    namespace: string | undefined,
    labelSelector?: string,
    pageSize?: number,
    select?: Select<Watched['statefulsets'], U>,
  ): Promise<ListResult<U>> {
    return this.list('statefulsets', namespace, labelSelector, pageSize, select as Select<unknown, U>);
  }
  listPods<U>(
    namespace: string | undefined,
    labelSelector?: string,
    pageSize?: number,
    select?: Select<Watched['pods'], U>,
  ): Promise<ListResult<U>> {
    return this.list('pods', namespace, labelSelector, pageSize, select as Select<unknown, U>);
  }
  listJobs<U>(
    namespace: string | undefined,
    labelSelector?: string,
    pageSize?: number,
    select?: Select<Watched['jobs'], U>,
  ): Promise<ListResult<U>> {
    return this.list('jobs', namespace, labelSelector, pageSize, select as Select<unknown, U>);
  }

  private list<U>(
    resource: WatchedResource,
    namespace: string | undefined,
    labelSelector: string | undefined,
    pageSize: number | undefined,
    select: Select<unknown, U> | undefined,
  ): Promise<ListResult<U>> {
    return new Promise((resolve, reject) => {
      this.lists.push({
        resource,
        namespace,
        labelSelector,
        pageSize,
        respond: (objects, resourceVersion) => {
          const items: U[] = [];
          for (const o of objects) {
            const u = select ? select(o) : (o as U);
            if (u !== undefined) items.push(u);
          }
          const answer = { items, resourceVersion };
          this.answers.push(new WeakRef(answer));
          resolve(answer);
        },
        fail: reject,
      });
    });
  }

  watch<R extends WatchedResource>(
    resource: R,
    namespace: string | undefined,
    options: WatchOptions,
    onEvent: (event: WatchEvent<Watched[R]>) => void,
  ): WatchHandle {
    let settle: ((error?: Error) => void) | undefined;
    const done = new Promise<void>((resolve, reject) => {
      settle = (error) => {
        if (error === undefined) resolve();
        else reject(error);
      };
    });
    let open = true;
    const close = (error?: Error): void => {
      if (!open) return;
      open = false;
      settle?.(error);
    };
    const w: FakeWatch = {
      resource,
      namespace,
      options,
      stopped: false,
      emit: (event) => {
        if (!open) throw new Error('emit on a closed watch');
        try {
          onEvent(event);
        } catch (e) {
          close(e as Error);
        }
      },
      end: () => {
        close();
      },
      fail: (error) => {
        close(error);
      },
    };
    this.watches.push(w);
    return {
      done,
      stop: () => {
        w.stopped = true;
        close();
      },
    };
  }
}

// --- helpers -------------------------------------------------------------------------------------------

function pod(name: string, rv: string, phase: 'Pending' | 'Running' | 'Failed' = 'Running'): Stored<Pod> {
  return {
    metadata: { name, namespace: 'ns', uid: `uid-${name}`, resourceVersion: rv, creationTimestamp: 't' },
    status: { phase },
  };
}

/** What the tests hold of a pod: its phase (a Failed pod is not wanted). */
interface Proj {
  phase: string;
  rv: HeldVersion;
}
const projectPod = (p: Stored<Pod>, rv: HeldVersion): Proj | undefined =>
  p.status?.phase === 'Failed' ? undefined : { phase: p.status?.phase ?? '', rv };

async function flush(): Promise<void> {
  for (let i = 0; i < 5; i++) await new Promise((r) => setImmediate(r));
}

async function until(what: string, check: () => boolean): Promise<void> {
  for (let i = 0; i < 200; i++) {
    if (check()) return;
    await new Promise((r) => setImmediate(r));
  }
  throw new Error(`never happened: ${what}`);
}

class Harness {
  readonly port = new ScriptedPort();
  readonly log: string[] = [];
  readonly sleeps: number[] = [];
  readonly errors: { error: unknown; source: string; retryInMs?: number | undefined }[] = [];
  readonly restarts: string[] = [];
  readonly relists: { reason: SyncReason; upserted: number; deleted: number; detail?: string | undefined }[] =
    [];
  readonly events: string[] = [];
  readonly states: ReflectorState[] = [];
  readonly projected: string[] = [];
  clock = 1_000_000;
  rand = 0;
  readonly reflector: Reflector<'pods', Proj>;

  constructor(options: Partial<ReflectorBaseOptions<Proj>> = {}) {
    const observer: ReflectorObserver = {
      onEvent: (type) => this.events.push(type),
      onRelist: (reason, stats) =>
        this.relists.push({
          reason,
          upserted: stats.upserted,
          deleted: stats.deleted,
          detail: stats.detail,
        }),
      onWatchRestart: (reason) => this.restarts.push(reason),
      onError: (error, info) => this.errors.push({ error, source: info.source, retryInMs: info.retryInMs }),
      onStateChange: (state) => this.states.push(state),
    };
    this.reflector = new Reflector<'pods', Proj>({
      kube: this.port,
      resource: 'pods',
      namespace: 'ns',
      labelSelector: 'app=x',
      project: (p, rv) => {
        this.projected.push(p.metadata.name);
        return projectPod(p, rv);
      },
      handler: {
        onUpsert: (key, next, prev) =>
          this.log.push(`upsert ${key} ${next.rv}${prev ? ` (was ${prev.rv})` : ''}`),
        onDelete: (key, prev) => this.log.push(`delete ${key} (was ${prev.rv})`),
        onSynced: (reason) => this.log.push(`synced ${reason}`),
      },
      observer,
      now: () => this.clock,
      sleep: (ms) => {
        this.sleeps.push(ms);
        return Promise.resolve();
      },
      random: () => this.rand,
      ...options,
    });
    running.push(this.reflector);
  }

  async list(n: number): Promise<ListRequest> {
    await until(`list #${n}`, () => this.port.lists.length >= n);
    return this.port.lists[n - 1]!;
  }

  async watch(n: number): Promise<FakeWatch> {
    await until(`watch #${n}`, () => this.port.watches.length >= n);
    return this.port.watches[n - 1]!;
  }

  /** Starts, answers the first list with `objects`, and returns the first watch. */
  async started(objects: Stored<Pod>[], rv = '10'): Promise<FakeWatch> {
    this.reflector.start();
    (await this.list(1)).respond(objects, rv);
    await this.reflector.synced;
    const w = await this.watch(1);
    this.log.length = 0;
    this.projected.length = 0;
    return w;
  }
}

const running: Reflector<'pods', Proj>[] = [];
afterEach(async () => {
  await Promise.all(running.splice(0).map((r) => r.stop()));
});

const expired = (): KubeApiError =>
  new KubeApiError({ status: 410, reason: 'Expired', message: 'too old resource version', transient: false });
const unavailable = (retryAfterSeconds?: number): KubeApiError =>
  new KubeApiError({
    status: 503,
    reason: 'ServiceUnavailable',
    message: 'try later',
    transient: true,
    retryAfterSeconds,
  });

// --- the tests -----------------------------------------------------------------------------------------

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

describe('Reflector: 410 Expired', () => {
  async function relistAfter(trigger: (w: Harness, watch: FakeWatch) => void): Promise<Harness> {
    const h = new Harness();
    const w1 = await h.started([pod('a', '1'), pod('b', '2'), pod('c', '3'), pod('e', '4')]);
    h.clock += 10_000;
    w1.emit({ type: 'BOOKMARK', object: { metadata: { resourceVersion: '20' } } });
    h.log.length = 0;
    trigger(h, w1);
    const list = await h.list(2);
    expect(list).toMatchObject({ resource: 'pods', namespace: 'ns', labelSelector: 'app=x' });
    expect(h.reflector.state).toBe('listing');
    // a unchanged, b changed, c gone, d new, e now Failed (projection undefined).
    list.respond([pod('a', '1'), pod('b', '25'), pod('d', '26'), pod('e', '27', 'Failed')], '30');
    const w2 = await h.watch(2);
    expect(w2.options.resourceVersion).toBe('30');
    expect(h.log).toEqual([
      'delete ns/c (was 3)',
      'delete ns/e (was 4)',
      'upsert ns/b 25 (was 2)',
      'upsert ns/d 26',
      'synced expired',
    ]);
    // The unchanged object was neither reported nor projected again.
    expect(h.projected).toEqual(['b', 'd', 'e']);
    expect([...h.reflector.keys()].sort()).toEqual(['ns/a', 'ns/b', 'ns/d']);
    expect(h.relists.at(-1)).toEqual({ reason: 'expired', upserted: 2, deleted: 2, detail: undefined });
    expect(h.restarts).toEqual(['expired']);
    expect(h.port.lists).toHaveLength(2);
    expect(h.sleeps).toEqual([]);
    expect(h.errors).toEqual([]);
    return h;
  }

  it('relists once on an ERROR event with code 410, diffed as mark and sweep', async () => {
    await relistAfter((_h, w) => {
      w.emit({ type: 'ERROR', object: { kind: 'Status', code: 410, reason: 'Expired', message: 'too old' } });
      expect(w.stopped).toBe(true);
    });
  });

  it('relists on an ERROR event whose reason is Gone without a code', async () => {
    await relistAfter((_h, w) => {
      w.emit({ type: 'ERROR', object: { reason: 'Gone' } });
    });
  });

  it('relists when the watch request is refused with 410', async () => {
    await relistAfter((_h, w) => {
      w.fail(expired());
    });
  });

  it('backs off before relisting when the version of a fresh list expires at once', async () => {
    const h = new Harness();
    const w1 = await h.started([pod('a', '1')]);
    w1.fail(expired());
    (await h.list(2)).respond([pod('a', '1')], '40');
    expect(h.sleeps).toEqual([800]);
    const w2 = await h.watch(2);
    w2.fail(expired());
    await h.list(3);
    expect(h.sleeps).toEqual([800, 1600]);
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
    running.push(r as unknown as Reflector<'pods', Proj>);
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

describe('Reflector: memory', () => {
  it("keeps nothing of a list's answer once applied, however many lists it made", async () => {
    setFlagsFromString('--expose-gc');
    const gc = runInNewContext('gc') as () => void;
    const h = new Harness();
    const w = await h.started([pod('a', '3'), pod('b', '5')]);
    w.emit({ type: 'ERROR', object: { kind: 'Status', code: 410, reason: 'Expired', message: 'too old' } });
    (await h.list(2)).respond([pod('a', '3'), pod('c', '8')], '12');
    await h.watch(2);
    expect(h.port.answers).toHaveLength(2);
    // The scripted port's requests hold their promises, so their answers; a real port's do not. And a
    // WeakRef holds its target to the end of the job that made it.
    h.port.lists.length = 0;
    await new Promise((resolve) => setImmediate(resolve));
    gc();
    expect(h.port.answers.map((a) => a.deref())).toEqual([undefined, undefined]);
    expect([...h.reflector.entries()].map(([k]) => k)).toEqual(['ns/a', 'ns/c']);
  });
});

describe('Reflector: resource versions', () => {
  it('compares opaque and numeric versions as the server sent them, across relists and events', async () => {
    const h = new Harness();
    const w = await h.started([pod('a', 'opaque-1'), pod('b', '007'), pod('c', '12')]);
    w.emit({ type: 'MODIFIED', object: pod('c', '12') });
    w.emit({ type: 'MODIFIED', object: pod('b', '7') });
    expect(h.log).toEqual(['upsert ns/b 7 (was 007)']);
    w.emit({ type: 'ERROR', object: { kind: 'Status', code: 410, reason: 'Expired', message: 'too old' } });
    (await h.list(2)).respond([pod('a', 'opaque-1'), pod('b', '7'), pod('c', '13')], '20');
    await h.watch(2);
    expect(h.projected).toEqual(['b', 'c']);
    expect(h.log.slice(1)).toEqual(['upsert ns/c 13 (was 12)', 'synced expired']);
  });
});

describe('Reflector: projections', () => {
  it('holds only what the projection keeps, and deletes an object whose projection becomes undefined', async () => {
    const h = new Harness();
    const w = await h.started([pod('a', '1'), pod('f', '2', 'Failed')]);
    expect(h.reflector.size).toBe(1);
    expect(h.reflector.get('ns/f')).toBeUndefined();
    w.emit({ type: 'ADDED', object: pod('g', '11', 'Failed') });
    w.emit({ type: 'MODIFIED', object: pod('a', '12', 'Failed') });
    w.emit({ type: 'MODIFIED', object: pod('f', '13', 'Running') });
    expect(h.log).toEqual(['delete ns/a (was 1)', 'upsert ns/f 13']);
    expect([...h.reflector.keys()]).toEqual(['ns/f']);
    expect(h.reflector.resourceVersion).toBe('13');
  });
});

describe('Reflector: relist on request', () => {
  it('stops the watch, relists with a diff, reports synced requested and resolves', async () => {
    const h = new Harness();
    const w1 = await h.started([pod('a', '1'), pod('b', '2')]);
    let done = false;
    const relisted = h.reflector.relist('downstream lost').then(() => (done = true));
    expect(w1.stopped).toBe(true);
    const list = await h.list(2);
    await flush();
    expect(done).toBe(false);
    list.respond([pod('a', '1'), pod('b', '3')], '20');
    await relisted;
    expect(h.log).toEqual(['upsert ns/b 3 (was 2)', 'synced requested']);
    const w2 = await h.watch(2);
    expect(w2.options.resourceVersion).toBe('20');
    expect(h.relists.at(-1)).toEqual({
      reason: 'requested',
      upserted: 1,
      deleted: 0,
      detail: 'downstream lost',
    });
    expect(h.restarts).toEqual([]);
    expect(h.sleeps).toEqual([]);
  });

  it('waits for the next list when asked during one; requests before it share it', async () => {
    const h = new Harness();
    h.reflector.start();
    const beforeSync = h.reflector.relist();
    (await h.list(1)).respond([pod('a', '1')], '10');
    await beforeSync; // the first list serves
    await h.watch(1);
    expect(h.port.lists).toHaveLength(1);

    const first = h.reflector.relist();
    const second = await h.list(2);
    let laterDone = false;
    const later = Promise.all([h.reflector.relist(), h.reflector.relist()]).then(() => (laterDone = true));
    second.respond([pod('a', '1')], '20');
    await first;
    await flush();
    expect(laterDone).toBe(false);
    (await h.list(3)).respond([], '21');
    await later;
    await h.watch(2);
    expect(h.port.lists).toHaveLength(3);
    expect(h.log.filter((l) => l.startsWith('synced'))).toEqual([
      'synced start',
      'synced requested',
      'synced requested',
    ]);
    expect(h.reflector.size).toBe(0);
  });

  it('keeps a requested relist through failed lists, and rejects it on stop', async () => {
    const h = new Harness();
    await h.started([pod('a', '1')]);
    const relisted = h.reflector.relist();
    (await h.list(2)).fail(unavailable());
    (await h.list(3)).fail(unavailable());
    await h.list(4);
    expect(h.sleeps).toEqual([800, 1600]);
    await h.reflector.stop();
    await expect(relisted).rejects.toThrow(/stopped before the relist/);
    await expect(h.reflector.relist()).rejects.toThrow(/is stopped/);
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
