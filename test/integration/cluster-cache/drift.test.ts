/**
 * With the periodic sync an hour away, the watch alone repairs drift: a workload deleted by hand comes
 * back with its pods, a hand scale and a hand image change are undone, and a repair ends after one more
 * round (the write of a spec already in place changes nothing). Our own stop costs no converge.
 */
import { type Job, Queue } from 'bullmq';
import type { V1Deployment, V1StatefulSet } from '@kubernetes/client-node';
import { JOBS, QUEUE_NAMES } from '@opi/queue';
import { ANNOTATION_GENERATION } from '@opi/translation';
import {
  NAMESPACE,
  WORKLOAD_KIND,
  type Service,
  call,
  eventually,
  lrpWorkloads,
  startService,
} from '../../support/service.js';
import { type Lrp, cacheEntry, desire, instances, livePods, lrp, settledEntry } from './lrps.js';
import { HOUR_MS, idleQueue, idleSyncs } from './queues.js';

type Workload = V1Deployment | V1StatefulSet;

async function workloadOf(s: Service, a: Lrp): Promise<Workload | undefined> {
  const [w, more] = await lrpWorkloads(s, a);
  if (more) throw new Error(`${a.pg} has more than one workload`);
  return w;
}

async function mustWorkload(s: Service, a: Lrp): Promise<Workload> {
  const w = await workloadOf(s, a);
  if (!w) throw new Error(`${a.pg} has no workload`);
  return w;
}

const nameOf = (w: Workload): string => w.metadata?.name ?? '';
const imageOf = (w: Workload): string => w.spec?.template.spec?.containers[0]?.image ?? '';
const stampOf = (w: Workload): string | undefined => w.metadata?.annotations?.[ANNOTATION_GENERATION];

/** `kubectl scale`: the scale subresource. */
async function scaleByHand(s: Service, w: Workload, replicas: number): Promise<void> {
  const body = { metadata: { name: nameOf(w), namespace: NAMESPACE }, spec: { replicas } };
  if (WORKLOAD_KIND === 'deployment')
    await s.apps.replaceNamespacedDeploymentScale({ name: nameOf(w), namespace: NAMESPACE, body });
  else await s.apps.replaceNamespacedStatefulSetScale({ name: nameOf(w), namespace: NAMESPACE, body });
}

/** `kubectl set image`: the whole object written back with the container's image changed. */
async function setImageByHand(s: Service, w: Workload, image: string): Promise<void> {
  const body = structuredClone(w);
  const container = body.spec?.template.spec?.containers[0];
  if (container) container.image = image;
  if (WORKLOAD_KIND === 'deployment')
    await s.apps.replaceNamespacedDeployment({ name: nameOf(w), namespace: NAMESPACE, body });
  else
    await s.apps.replaceNamespacedStatefulSet({
      name: nameOf(w),
      namespace: NAMESPACE,
      body: body as V1StatefulSet,
    });
}

async function deleteByHand(s: Service, w: Workload): Promise<void> {
  if (WORKLOAD_KIND === 'deployment')
    await s.apps.deleteNamespacedDeployment({ name: nameOf(w), namespace: NAMESPACE });
  else await s.apps.deleteNamespacedStatefulSet({ name: nameOf(w), namespace: NAMESPACE });
}

/**
 * `n` live pods, in the cache, and /instances showing them RUNNING at 0..n-1 (after a rollout or a
 * scale-down the pods left may hold other indexes in the cache; /instances shows them low).
 */
async function running(s: Service, a: Lrp, n: number): Promise<void> {
  const want = [...Array(n).keys()].map((i) => `${i}:RUNNING`).join();
  await eventually(
    async () => {
      const rows = await instances(s, a);
      const pods = await livePods(s, a);
      return (
        pods.length === n &&
        rows.map((r) => `${r.index}:${r.state}`).join() === want &&
        (await cacheEntry(s, a))?.instances.length === n
      );
    },
    `${n} running instances again`,
    20_000,
  );
}

describe(`the watch repairs drift (${WORKLOAD_KIND}s, no periodic sync)`, () => {
  let s: Service;
  let syncQueue: Queue;
  let lrpQueue: Queue;
  beforeAll(async () => {
    s = await startService({ workers: 1, env: { OPI_RESYNC_INTERVAL_MS: HOUR_MS } });
    syncQueue = new Queue(QUEUE_NAMES.sync, { connection: s.redis, prefix: s.settings.queuePrefix });
    lrpQueue = new Queue(QUEUE_NAMES.lrp, { connection: s.redis, prefix: s.settings.queuePrefix });
    await eventually(async () => s.workers[0]!.leader.cache(), 'the worker to hold the Lease and list');
  });
  afterAll(async () => {
    await syncQueue.close();
    await lrpQueue.close();
    await s.close();
  });

  /** The LRP's finished converges that carried the repair hint. */
  const repairs = async (a: Lrp): Promise<Job[]> =>
    (await lrpQueue.getJobs(['completed', 'failed'], 0, -1)).filter(
      (j) =>
        j.name === JOBS.convergeLrp.name &&
        (j.data as { processGuid?: string }).processGuid === a.pg &&
        (j.data as { repair?: boolean }).repair === true,
    );

  it('brings back a workload deleted by hand, with its pods', async () => {
    const syncs = await idleSyncs(syncQueue);
    const a = lrp(1, 'deleted');
    await desire(s, a, { instances: 2 });
    await settledEntry(s, a, 2);
    const before = await mustWorkload(s, a);
    await deleteByHand(s, before);
    const back = await eventually(async () => {
      const w = await workloadOf(s, a);
      return w && w.metadata?.uid !== before.metadata?.uid ? w : undefined;
    }, 'the workload made again');
    expect(stampOf(back)).toBe(stampOf(before));
    await settledEntry(s, a, 2);
    expect(await idleSyncs(syncQueue)).toBe(syncs);
  });

  it('undoes a hand scale, and the repair ends after one more round', async () => {
    const syncs = await idleSyncs(syncQueue);
    const a = lrp(2, 'scaled');
    await desire(s, a, { instances: 2 });
    await settledEntry(s, a, 2);
    const before = await mustWorkload(s, a);
    await scaleByHand(s, before, 5);
    await eventually(
      async () => {
        const w = await mustWorkload(s, a);
        return (w.metadata?.generation ?? 0) > (before.metadata?.generation ?? 0) && w.spec?.replicas === 2;
      },
      'the replicas put back',
      20_000,
    );
    // The pods the ReplicaSet keeps keep their indexes (maybe 0 and 3): /instances shows them at 0 and 1.
    await running(s, a, 2);
    await idleQueue(s, QUEUE_NAMES.lrp);
    // The scale, then our own repair of it (same stamp, new generation): two repairs, the second of
    // which finds the record's spec in place and writes nothing that moves the generation.
    const done = await repairs(a);
    expect(done.length).toBeGreaterThanOrEqual(1);
    expect(done.length).toBeLessThanOrEqual(2);
    const settled = await mustWorkload(s, a);
    expect(stampOf(settled)).toBe(stampOf(before));
    expect(await idleSyncs(syncQueue)).toBe(syncs);
  });

  it('undoes a hand image change', async () => {
    const syncs = await idleSyncs(syncQueue);
    const a = lrp(3, 'image');
    await desire(s, a, { instances: 1 });
    await settledEntry(s, a, 1);
    const before = await mustWorkload(s, a);
    await setImageByHand(s, before, 'registry.example/someone-else:2');
    await eventually(async () => {
      const w = await mustWorkload(s, a);
      return (w.metadata?.generation ?? 0) > (before.metadata?.generation ?? 0) + 1 &&
        imageOf(w) === imageOf(before)
        ? w
        : undefined;
    }, 'the image put back');
    await eventually(async () => {
      const pods = await livePods(s, a);
      return pods.length === 1 && pods.every((p) => p.spec?.containers[0]?.image === imageOf(before));
    }, 'its pod running the record image');
    await running(s, a, 1);
    await idleQueue(s, QUEUE_NAMES.lrp);
    expect((await repairs(a)).length).toBeLessThanOrEqual(2);
    expect(await idleSyncs(syncQueue)).toBe(syncs);
  });

  it('converges nothing when our own stop deletes the workload', async () => {
    const a = lrp(4, 'stopped');
    await desire(s, a, { instances: 1 });
    await settledEntry(s, a, 1);
    expect((await call(s.base, 'PUT', `/apps/${a.guid}/${a.version}/stop`)).status).toBe(200);
    await eventually(async () => (await workloadOf(s, a)) === undefined, 'the workload gone');
    await eventually(async () => (await livePods(s, a)).length === 0, 'its pods gone');
    await s.workers[0]!.leader.cache()?.settled();
    await idleQueue(s, QUEUE_NAMES.lrp);
    expect(await repairs(a)).toEqual([]);
  });
});
