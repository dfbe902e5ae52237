/**
 * The watched cluster cache end to end: the simulated cluster, real Redis, the API and in-process workers.
 * With the periodic sync an hour away, only the watch can put a desired LRP's pods into /instances, replace
 * a deleted pod (its index reused, the others kept), report each crash once and a finished task once. One
 * worker of two holds the Lease and hands it over when it closes; a Redis FLUSHDB is relisted and the
 * records, cache and tasks rebuilt; /readyz waits for the first lists; the watch metrics are exposed;
 * while nothing changes the service sends no LIST at all; and a claim of the cache that Redis refuses at
 * takeover is tried again.
 */
import { Queue } from 'bullmq';
import { Redis } from 'ioredis';
import { AppsV1Api, BatchV1Api, KubeConfig, type V1Pod, type V1StatefulSet } from '@kubernetes/client-node';
import { QUEUE_NAMES } from '@opi/queue';
import { type CachedInstances, keys } from '@opi/state';
import { ANNOTATION_TASK_GUID, lrpSelectorString, lrpToStatefulSet, workloadName } from '@opi/translation';
import { sampleLrp } from '../../libs/translation/src/lrp.fixture.js';
import type { RunningWorker } from '../../apps/worker/src/index.js';
import { type FakeCc, startFakeCc } from '../support/fake-cc.js';
import { taskBody } from '../support/task-body.js';
import {
  NAMESPACE,
  WORKLOAD_KIND,
  type Service,
  call,
  deployedGuids,
  desireBody,
  eventually,
  schedulingInfos,
  startService,
  uuid,
} from './harness.js';

/** The kinds the cache writer watches, each listed once at its start. */
const WATCHED_KINDS = ['deployments', 'statefulsets', 'pods', 'jobs'] as const;
const HOUR_MS = '3600000';
const MANAGED = 'app.kubernetes.io/managed-by=opi-server';
/** What the report leaves on a task's Job once CC has its completion (handlers/report.ts). */
const REPORTED = 'opi.cloudfoundry.org/reported-at';
const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

interface Lrp {
  guid: string;
  version: string;
  pg: string;
}

function lrp(n: number, salt: string): Lrp {
  const guid = uuid(n, salt);
  const version = uuid(n, 'v1');
  return { guid, version, pg: `${guid}-${version}` };
}

async function desire(s: Service, a: Lrp, extra: Record<string, unknown> = {}): Promise<void> {
  const r = await call(s.base, 'PUT', `/apps/${a.pg}`, desireBody(a.guid, a.version, extra));
  expect(r.status).toBe(202);
}

interface InstanceRow {
  index: number;
  since: number;
  state: string;
}

async function instances(s: Service, a: Lrp): Promise<InstanceRow[]> {
  const r = await call(s.base, 'GET', `/apps/${a.guid}/${a.version}/instances`);
  if (r.status !== 200) return [];
  return (JSON.parse(r.text) as { instances: InstanceRow[] }).instances;
}

/** The LRP's entry in the Redis instances cache (what /instances answers from), with pod names. */
async function cacheEntry(s: Service, a: Lrp): Promise<CachedInstances | undefined> {
  const v = await s.redis.hget(keys(s.settings.queuePrefix).instances, a.pg);
  return v === null ? undefined : (JSON.parse(v) as CachedInstances);
}

/** The LRP's live pods in the cluster (not terminating). */
async function livePods(s: Service, a: Lrp): Promise<V1Pod[]> {
  const list = await s.core.listNamespacedPod({
    namespace: NAMESPACE,
    labelSelector: lrpSelectorString(a.guid, a.version),
  });
  return list.items.filter((p) => !p.metadata?.deletionTimestamp);
}

/**
 * The cache entry once it shows `n` RUNNING instances at indexes 0..n-1, exactly the LRP's live pods, and
 * /instances agrees.
 */
async function settledEntry(s: Service, a: Lrp, n: number, timeoutMs = 30_000): Promise<CachedInstances> {
  return eventually(
    async () => {
      const entry = await cacheEntry(s, a);
      if (!entry || entry.instances.length !== n) return undefined;
      if (!entry.instances.every((i) => i.state === 'RUNNING')) return undefined;
      const indexes = entry.instances.map((i) => i.index).sort((x, y) => x - y);
      if (indexes.join() !== [...Array(n).keys()].join()) return undefined;
      const pods = (await livePods(s, a)).map((p) => p.metadata?.name ?? '').sort();
      if (
        entry.instances
          .map((i) => i.podName)
          .sort()
          .join() !== pods.join()
      )
        return undefined;
      const rows = await instances(s, a);
      if (rows.length !== n || !rows.every((r) => r.state === 'RUNNING')) return undefined;
      return entry;
    },
    `${a.pg}: ${n} RUNNING instances in the cache, matching the cluster`,
    timeoutMs,
  );
}

function podAt(entry: CachedInstances, index: number): string {
  const row = entry.instances.find((i) => i.index === index);
  if (!row) throw new Error(`no instance at index ${index}`);
  return row.podName;
}

/**
 * Deletes the pod and waits for its replacement in the settled cache entry: a new name from a Deployment,
 * the same name (and index) with a new uid from a StatefulSet.
 */
async function replacePod(s: Service, a: Lrp, n: number, gone: string): Promise<CachedInstances> {
  const uid = (await livePods(s, a)).find((p) => p.metadata?.name === gone)?.metadata?.uid;
  await s.core.deleteNamespacedPod({ namespace: NAMESPACE, name: gone });
  return eventually(async () => {
    const e = await settledEntry(s, a, n);
    if (WORKLOAD_KIND === 'deployment') return e.instances.some((i) => i.podName === gone) ? undefined : e;
    const back = (await livePods(s, a)).find((p) => p.metadata?.name === gone);
    return back && back.metadata?.uid !== uid ? e : undefined;
  }, 'the replacement pod in the cache');
}

/** Waits until the queue has nothing waiting, running or retrying. */
async function idleQueue(s: Service, name: string): Promise<void> {
  const q = new Queue(name, { connection: s.redis, prefix: s.settings.queuePrefix });
  try {
    await eventually(async () => {
      const c = await q.getJobCounts('waiting', 'active', 'delayed');
      return Object.values(c).every((n) => n === 0);
    }, `the ${name} queue to be idle`);
  } finally {
    await q.close();
  }
}

/** The service's task and staging Jobs. */
async function jobs(s: Service) {
  const kc = new KubeConfig();
  kc.loadFromString(s.sim.kubeconfig());
  return (
    await kc.makeApiClient(BatchV1Api).listNamespacedJob({ namespace: NAMESPACE, labelSelector: MANAGED })
  ).items;
}

/** Sync runs so far, once none is waiting or running. */
async function idleSyncs(q: Queue): Promise<number> {
  return eventually(async () => {
    const c = await q.getJobCounts('waiting', 'active', 'completed', 'failed');
    return c['waiting'] === 0 && c['active'] === 0 ? (c['completed'] ?? 0) + (c['failed'] ?? 0) : undefined;
  }, 'the sync queue to be idle');
}

/** The sum of a counter's series on one worker whose labels include `match`. */
async function counter(
  m: { get(): Promise<{ values: { labels: Record<string, unknown>; value: number }[] }> },
  match: Record<string, string> = {},
): Promise<number> {
  const { values } = await m.get();
  return values
    .filter((v) => Object.entries(match).every(([k, want]) => String(v.labels[k]) === want))
    .reduce((a, v) => a + v.value, 0);
}

/** LISTs the worker sent to the cluster, through its port's onCall. */
function listsOf(w: RunningWorker): Promise<number> {
  return counter(w.metrics.kubeRequests, { verb: 'list' });
}

/** A worker's Prometheus text, as a map `name{labels}` → value. */
async function scrape(w: RunningWorker): Promise<Map<string, number>> {
  const res = await fetch(`http://127.0.0.1:${w.metricsPort}/metrics`);
  expect(res.status).toBe(200);
  const out = new Map<string, number>();
  for (const line of (await res.text()).split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    const at = line.lastIndexOf(' ');
    out.set(line.slice(0, at), Number(line.slice(at + 1)));
  }
  return out;
}

async function taskGuids(s: Service): Promise<string[]> {
  const r = await call(s.base, 'GET', '/tasks');
  return r.status === 200 ? (JSON.parse(r.text) as { guid: string }[]).map((t) => t.guid) : [];
}

interface CrashReport {
  instance: string;
  index: number;
  crash_count: number;
  exit_status: number;
}

describe('the cache follows the watch (no periodic sync)', () => {
  let cc: FakeCc;
  let s: Service;
  let syncQueue: Queue;
  beforeAll(async () => {
    cc = await startFakeCc({ rejectRepeats: true });
    s = await startService({
      workers: 1,
      workerMetrics: true,
      env: {
        OPI_RESYNC_INTERVAL_MS: HOUR_MS,
        CC_INTERNAL_URL: cc.url,
        OPI_CALLBACK_BACKOFF_MS: '500',
      },
    });
    syncQueue = new Queue(QUEUE_NAMES.sync, { connection: s.redis, prefix: s.settings.queuePrefix });
    await eventually(async () => s.workers[0]!.leader.cache(), 'the worker to hold the Lease and list');
  });
  afterAll(async () => {
    await syncQueue.close();
    await s.close();
    await cc.close();
  });

  it("shows a desired LRP's pods in /instances with no sync running", async () => {
    const syncs = await idleSyncs(syncQueue);
    const a = lrp(1, 'watch');
    await desire(s, a, { instances: 2 });
    const entry = await settledEntry(s, a, 2);
    expect(entry.instances.map((i) => i.index).sort()).toEqual([0, 1]);
    expect(await idleSyncs(syncQueue)).toBe(syncs);
  });

  it('replaces a deleted pod at once, reusing its index; the other pods keep theirs', async () => {
    const syncs = await idleSyncs(syncQueue);
    const a = lrp(2, 'watch');
    await desire(s, a, { instances: 3 });
    const before = await settledEntry(s, a, 3);
    const [keep0, gone, keep2] = [podAt(before, 0), podAt(before, 1), podAt(before, 2)];
    const after = await replacePod(s, a, 3, gone);
    expect(podAt(after, 0)).toBe(keep0);
    expect(podAt(after, 2)).toBe(keep2);
    if (WORKLOAD_KIND === 'deployment') expect(podAt(after, 1)).not.toBe(gone);
    else expect(podAt(after, 1)).toBe(gone);
    expect((await instances(s, a)).map((i) => [i.index, i.state])).toEqual([
      [0, 'RUNNING'],
      [1, 'RUNNING'],
      [2, 'RUNNING'],
    ]);

    // Scaled down: whichever pods the ReplicaSet keeps, each keeps its index.
    const update = { guid: a.guid, version: a.version, update: { instances: 2, annotation: 'down' } };
    expect((await call(s.base, 'POST', `/apps/${a.pg}`, update)).status).toBe(200);
    const down = await eventually(async () => {
      const e = await cacheEntry(s, a);
      const live = (await livePods(s, a)).map((p) => p.metadata?.name ?? '').sort();
      const cached = (e?.instances ?? []).map((i) => i.podName).sort();
      return live.length === 2 && cached.join() === live.join() ? e : undefined;
    }, 'the scale-down in the cache');
    const indexOf = new Map(after.instances.map((i) => [i.podName, i.index]));
    for (const i of down.instances) expect(indexOf.get(i.podName)).toBe(i.index);
    expect(await idleSyncs(syncQueue)).toBe(syncs);
  });

  it("gives a StatefulSet's pods their ordinals as indexes, and a replaced pod its own again", async () => {
    const a = lrp(7, 'watch');
    const spec = sampleLrp({
      guid: a.guid,
      version: a.version,
      processGuid: a.pg,
      namespace: NAMESPACE,
      // Eleven: by creation and name, `-10` would come before `-2` and take index 2.
      instances: 11,
      volumeMounts: [],
      healthCheck: { type: 'process', httpEndpoint: '', timeoutMs: 0 },
    });
    delete spec.registry;
    const kc = new KubeConfig();
    kc.loadFromString(s.sim.kubeconfig());
    const sts = lrpToStatefulSet(spec, { runAsNonRoot: false, instanceIndexEnv: true });
    await kc.makeApiClient(AppsV1Api).createNamespacedStatefulSet({
      namespace: NAMESPACE,
      body: sts as unknown as V1StatefulSet,
    });
    const name = workloadName(spec);
    const ordinals = (e: CachedInstances) =>
      e.instances.map((i) => [i.index, i.podName] as const).sort((x, y) => x[0] - y[0]);
    const expected = [...Array(11).keys()].map((i) => [i, `${name}-${i}`] as const);
    await eventually(async () => {
      const e = await cacheEntry(s, a);
      return (
        e &&
        e.instances.every((i) => i.state === 'RUNNING') &&
        JSON.stringify(ordinals(e)) === JSON.stringify(expected)
      );
    }, 'pods <name>-0..10 at indexes 0..10');

    const before = (await livePods(s, a)).find((p) => p.metadata?.name === `${name}-1`)?.metadata?.uid;
    await s.core.deleteNamespacedPod({ namespace: NAMESPACE, name: `${name}-1` });
    await eventually(async () => {
      const now = (await livePods(s, a)).find((p) => p.metadata?.name === `${name}-1`)?.metadata?.uid;
      const e = await cacheEntry(s, a);
      return (
        now !== undefined && now !== before && e && JSON.stringify(ordinals(e)) === JSON.stringify(expected)
      );
    }, 'the new pod <name>-1 back at index 1');
  });

  it('posts one crash report per crash of a crash-looping app', async () => {
    const a = lrp(3, 'crash');
    await desire(s, a, {
      environment: { KUBESIM_BEHAVIOUR: 'crash', KUBESIM_EXIT_CODE: '7', KUBESIM_RUN_MS: '100' },
    });
    const reports = (): CrashReport[] =>
      cc.callsTo(`/internal/v4/apps/${a.pg}/crashed`).map((c) => c.body as CrashReport);
    await eventually(async () => reports().length >= 4, 'four crash reports', 60_000);
    // Restarts so far: each of them must be reported by the end.
    const restarts = new Map(
      (await livePods(s, a)).map((p) => [
        p.metadata?.name ?? '',
        p.status?.containerStatuses?.[0]?.restartCount ?? 0,
      ]),
    );
    expect([...restarts.values()].every((n) => n >= 1)).toBe(true);
    // Stop it: its pod goes, no further crash happens, and whatever was due is delivered.
    expect((await call(s.base, 'PUT', `/apps/${a.guid}/${a.version}/stop`)).status).toBe(200);
    await eventually(async () => (await livePods(s, a)).length === 0, 'the crashing pod to go');
    await idleQueue(s, QUEUE_NAMES.callback);
    // Every crash (restart 1, 2, …, the last) of every pod was reported, and none twice.
    const byPod = new Map<string, number[]>();
    for (const r of reports()) byPod.set(r.instance, [...(byPod.get(r.instance) ?? []), r.crash_count]);
    for (const [, counts] of byPod) {
      const sorted = [...counts].sort((x, y) => x - y);
      expect(sorted).toEqual(sorted.map((_, i) => i + 1));
    }
    for (const [pod, n] of restarts) expect(byPod.get(pod)?.length ?? 0).toBeGreaterThanOrEqual(n);
    expect(reports()[0]).toMatchObject({ exit_status: 7, index: 0 });
  }, 90_000);

  it("posts a finished task's completion once", async () => {
    const syncs = await idleSyncs(syncQueue);
    const g = uuid(1, 'task');
    expect(
      (await call(s.base, 'POST', `/tasks/${g}`, taskBody(cc.url, g, { KUBESIM_RUN_MS: '300' }))).status,
    ).toBe(202);
    const path = `/internal/v4/tasks/${g}/completed`;
    await eventually(async () => cc.callsTo(path).length > 0, 'the completion callback');
    await eventually(async () => !(await taskGuids(s)).includes(g), 'the task to leave GET /tasks');
    // Its Job changes again (the reported mark, which the cache sees): no second post comes of it.
    await eventually(async () => {
      const job = (await jobs(s)).find((j) => j.metadata?.annotations?.[ANNOTATION_TASK_GUID] === g);
      return !job || job.metadata?.annotations?.[REPORTED] !== undefined;
    }, 'the Job to be marked reported');
    await idleQueue(s, QUEUE_NAMES.callback);
    expect(cc.callsTo(path).map((c) => [c.status, c.body])).toEqual([
      [200, { task_guid: g, failed: false, failure_reason: '' }],
    ]);
    expect(await idleSyncs(syncQueue)).toBe(syncs);
  });

  it('exposes the watch metrics: events, the start lists, the writer gauge, the write lag', async () => {
    const m = await scrape(s.workers[0]!);
    for (const kind of WATCHED_KINDS) {
      expect(m.get(`opi_watch_relists_total{kind="${kind}",reason="start"}`)).toBe(1);
    }
    const events = [...m].filter(([k]) => k.startsWith('opi_watch_events_total{'));
    expect(
      events.find(([k]) => k.includes('kind="pods"') && k.includes('type="ADDED"'))?.[1],
    ).toBeGreaterThan(0);
    expect(
      events.find(([k]) => k.includes('kind="jobs"') && k.includes('type="MODIFIED"'))?.[1],
    ).toBeGreaterThan(0);
    expect(m.get('opi_cache_writer')).toBe(1);
    expect(m.get('opi_cache_write_lag_seconds_count{kind="pods"}')).toBeGreaterThan(0);
  });
});

describe('two workers share one Lease', () => {
  let s: Service;
  beforeAll(async () => {
    // The default harness sync (every 500 ms) runs throughout: it reads the watched state, never lists.
    s = await startService({ workers: 2 });
  });
  afterAll(async () => {
    await s.close();
  });

  const holders = () => s.workers.filter((w) => w.leader.isLeader());

  it('has exactly one holder, and nobody sends a LIST while nothing changes, even across cut watches', async () => {
    const holder = await eventually(async () => {
      const h = holders();
      return h.length === 1 && h[0]!.leader.cache() ? h[0] : undefined;
    }, 'one worker to hold the Lease and list');
    const a = lrp(1, 'two');
    await desire(s, a, { instances: 2 });
    await settledEntry(s, a, 2);
    for (const w of s.workers) {
      expect(await counter(w.metrics.cacheWriter)).toBe(w === holder ? 1 : 0);
      // Only the holder ever listed: one list per kind (each fits one page).
      expect(await listsOf(w)).toBe(w === holder ? WATCHED_KINDS.length : 0);
    }

    // The simulator counts every LIST it answers, whoever asks; the test itself asks nothing meanwhile.
    let simLists = 0;
    const decide = s.sim.faults.decide.bind(s.sim.faults);
    s.sim.faults.decide = (verb, resource) => {
      if (verb === 'list') simLists++;
      return decide(verb, resource);
    };
    const syncQueue = new Queue(QUEUE_NAMES.sync, { connection: s.redis, prefix: s.settings.queuePrefix });
    try {
      const syncs = await syncQueue.getCompletedCount();
      const restarts = await counter(holder.metrics.watchRestarts);
      await sleep(2000);
      // A cut watch resumes from the version it saw: no LIST either.
      expect(s.sim.faults.cutWatches()).toBeGreaterThanOrEqual(3);
      await sleep(3000);
      expect(simLists).toBe(0);
      expect(await listsOf(holder)).toBe(WATCHED_KINDS.length);
      expect(await counter(holder.metrics.watchRestarts)).toBeGreaterThan(restarts);
      for (const kind of WATCHED_KINDS) {
        expect(await counter(holder.metrics.watchRelists, { kind })).toBe(1);
      }
      // The sync ran meanwhile (every 500 ms here), from the watched state.
      expect(await syncQueue.getCompletedCount()).toBeGreaterThan(syncs);
    } finally {
      s.sim.faults.decide = decide;
      await syncQueue.close();
    }
    for (const w of s.workers) expect(w.leader.isLeader()).toBe(w === holder);
  });

  it('hands over when the holder closes; the other worker keeps the cache fresh', async () => {
    const a = lrp(1, 'two');
    const holder = holders()[0]!;
    const other = s.workers.find((w) => w !== holder)!;
    await holder.close();
    s.workers.splice(s.workers.indexOf(holder), 1);
    await eventually(async () => other.leader.cache(), 'the other worker to take the Lease and list');
    expect(await counter(other.metrics.cacheWriter)).toBe(1);

    const before = await settledEntry(s, a, 2);
    const gone = podAt(before, 0);
    const after = await replacePod(s, a, 2, gone);
    expect(podAt(after, 1)).toBe(podAt(before, 1));
    // A scale-up shows too.
    const r = await call(s.base, 'POST', `/apps/${a.pg}`, {
      guid: a.guid,
      version: a.version,
      update: { instances: 3, annotation: 'scaled' },
    });
    expect(r.status).toBe(200);
    await settledEntry(s, a, 3);
  });
});

describe('a Redis FLUSHDB', () => {
  // A database of its own, flushed only when it holds nothing but this service's keys.
  const DB = 13;
  let cc: FakeCc;
  let s: Service;
  beforeAll(async () => {
    cc = await startFakeCc();
    s = await startService({
      workers: 1,
      redisDb: DB,
      env: { OPI_RESYNC_INTERVAL_MS: HOUR_MS, CC_INTERNAL_URL: cc.url },
    });
  });
  afterAll(async () => {
    await s.close();
    await cc.close();
  });

  it('is relisted: the records, the cache and the running tasks come back', async () => {
    const apps = [lrp(1, 'flush'), lrp(2, 'flush'), lrp(3, 'flush')];
    for (const [i, a] of apps.entries()) await desire(s, a, { instances: i + 1, last_updated: `t${i}` });
    const task = uuid(1, 'flusht');
    expect(
      (await call(s.base, 'POST', `/tasks/${task}`, taskBody(cc.url, task, { KUBESIM_RUN_MS: '600000' })))
        .status,
    ).toBe(202);
    const before = new Map<string, CachedInstances>();
    for (const [i, a] of apps.entries()) before.set(a.pg, await settledEntry(s, a, i + 1));
    expect(await taskGuids(s)).toEqual([task]);
    const k = keys(s.settings.queuePrefix);
    const fence = await s.redis.get(k.cacheFence);
    expect(fence).not.toBeNull();

    const db = new Redis(`redis://127.0.0.1:6379/${DB}`);
    try {
      const foreign = (await db.keys('*')).filter((key) => !key.startsWith(`${s.settings.queuePrefix}:`));
      expect(foreign).toEqual([]);
      await db.flushdb();
    } finally {
      db.disconnect();
    }
    expect((await schedulingInfos(s.base)).size).toBe(0);

    const infos = await eventually(async () => {
      const m = await schedulingInfos(s.base);
      return m.size === apps.length ? m : undefined;
    }, 'the records to be rebuilt from the cluster');
    for (const [i, a] of apps.entries()) {
      expect(infos.get(a.pg)).toBe(`t${i}`);
      // The same pods (the flush lost which index each had: they are assigned again, 0..n-1).
      const entry = await settledEntry(s, a, i + 1);
      const names = (e: CachedInstances): string[] => e.instances.map((x) => x.podName).sort();
      expect(names(entry)).toEqual(names(before.get(a.pg)!));
    }
    await eventually(async () => (await taskGuids(s)).includes(task), 'the running task to be listed again');
    // The worker noticed on its own and listed every kind again (the periodic sync is an hour away).
    for (const kind of WATCHED_KINDS) {
      expect(await counter(s.workers[0]!.metrics.watchRelists, { kind, reason: 'requested' })).toBe(1);
    }
    expect(await s.redis.get(k.cacheFence)).toBe(fence);
    expect(await s.redis.get(k.cacheEpoch)).not.toBeNull();
    expect((await deployedGuids(s)).size).toBe(apps.length);
  }, 90_000);
});

describe('worker /readyz and the watches', () => {
  let s: Service;
  beforeAll(async () => {
    s = await startService({ workers: 0, workerMetrics: true });
  });
  afterAll(async () => {
    await s.close();
  });

  interface Readiness {
    status: string;
    checks: Record<string, { ok: boolean; message: string }>;
  }
  const readyz = async (w: RunningWorker): Promise<{ status: number; body: Readiness }> => {
    const res = await fetch(`http://127.0.0.1:${w.metricsPort}/readyz`);
    return { status: res.status, body: (await res.json()) as Readiness };
  };

  it('is 503 until the first list of every kind is applied, then 200 naming the kinds', async () => {
    // Every LIST fails for now: the worker takes the Lease but cannot list.
    s.sim.faults.set({ errorRate: 1, errorCodes: [500], verbs: ['list'] });
    const w = await s.addWorker();
    await eventually(
      async () =>
        w.leader.isLeader() && (await counter(w.metrics.kubeRequests, { verb: 'list', status: '500' })) >= 3,
      'the Lease and failed lists',
    );
    const notYet = await readyz(w);
    expect(notYet.status).toBe(503);
    expect(notYet.body.checks['redis']?.ok).toBe(true);
    expect(notYet.body.checks['kubernetes']?.ok).toBe(true);
    expect(notYet.body.checks['watches']?.ok).toBe(false);
    for (const kind of WATCHED_KINDS) {
      expect(notYet.body.checks['watches']?.message).toContain(`${kind}: not listed yet`);
    }
    expect(w.leader.cache()).toBeUndefined();

    s.sim.faults.reset();
    const ready = await eventually(async () => {
      const r = await readyz(w);
      return r.status === 200 ? r : undefined;
    }, '/readyz 200');
    expect(ready.body.status).toBe('ok');
    expect(ready.body.checks['watches']).toEqual({
      ok: true,
      message: 'watching: deployments 0, statefulsets 0, pods 0, jobs 0',
    });
  });
});

describe('a cache claim that fails at takeover', () => {
  let s: Service;
  beforeAll(async () => {
    s = await startService({ workers: 0 });
  });
  afterAll(async () => {
    await s.close();
  });

  it('is tried again: the holder still comes to watch and write the cache', async () => {
    // Any error answer to the claim script will do (a failover's READONLY, OOM, …): here the fence key
    // holds the wrong type, so the script fails until the key is gone.
    const fence = keys(s.settings.queuePrefix).cacheFence;
    await s.redis.hset(fence, 'wrong', 'type');
    const w = await s.addWorker();
    await eventually(
      async () => (await counter(w.metrics.cacheWriter)) === 1,
      'the worker to take the Lease',
    );
    // The claim was sent the moment it took the Lease; its error answer is back long before this.
    await sleep(1000);
    await s.redis.del(fence);
    await eventually(async () => w.leader.cache(), 'the holder to claim the cache and list', 20_000);
    expect(w.leader.isLeader()).toBe(true);
    const a = lrp(1, 'claim');
    await desire(s, a);
    await settledEntry(s, a, 1);
  });
});
