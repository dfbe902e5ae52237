/**
 * With the periodic sync an hour away, only the watch puts a desired LRP's pods into the cache and
 * /instances, replaces a deleted pod at its index, reports each crash and a finished task once, and shows
 * in the worker's watch metrics.
 */
import { Queue } from 'bullmq';
import { AppsV1Api, KubeConfig, type V1StatefulSet } from '@kubernetes/client-node';
import { QUEUE_NAMES } from '@opi/queue';
import type { CachedInstances } from '@opi/state';
import { ANNOTATION_TASK_GUID, lrpToStatefulSet, workloadName } from '@opi/translation';
import { taskBody, uuid } from '@opi/contract/testing';
import { sampleLrp } from '../../../libs/translation/src/lrp.fixture.js';
import { type FakeCc, startFakeCc } from '../../support/fake-cc.js';
import {
  NAMESPACE,
  WORKLOAD_KIND,
  type Service,
  call,
  eventually,
  startService,
} from '../../support/service.js';
import { cacheEntry, desire, instances, livePods, lrp, podAt, replacePod, settledEntry } from './lrps.js';
import { HOUR_MS, idleQueue, idleSyncs } from './queues.js';
import { jobs, taskGuids } from './tasks.js';
import { WATCHED_KINDS, scrape } from './worker-metrics.js';

/** What the report leaves on a task's Job once CC has its completion (handlers/report.ts). */
const REPORTED = 'opi.cloudfoundry.org/reported-at';

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
