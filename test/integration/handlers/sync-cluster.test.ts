/**
 * sync-cluster from the watched cluster, through the client-node adapter against the simulated cluster
 * (pods seeded into its store, as a ReplicaSet and kubelet would leave them): cached instances and their
 * indexes, one sync at a time under a lock that outlives a dead holder only briefly, and desires that
 * arrive while a sync runs.
 */
import type { Pod } from '@opi/kube-objects';
import { QUEUE_NAMES } from '@opi/queue';
import { convergeLrp, startSyncWorker, syncCluster } from '../../../apps/worker/src/index.js';
import {
  NS,
  SYNC_LOCK_TTL_MS,
  desireAndConverge,
  handlerSuite,
  newLrp,
  objects,
  removeTerminatedPods,
  seedPod,
} from '../../support/handler-deps.js';
import {
  cachedIndexes,
  nanos,
  pod,
  schedulingInfos,
  syncWatched,
  withWatchedView,
} from '../../support/handler-sync.js';
import { eventually } from '../../support/eventually.js';

const callbackRetry = { firstDelayMs: 50, maxDelayMs: 1000, windowMs: 60_000 };

const suite = handlerSuite('sync-cluster');

/** A pod of no LRP. */
const stranger: Pod = {
  metadata: { name: 'stranger', labels: { app: 'stranger' } },
  spec: { containers: [{ name: 'main', image: 'registry.example/stranger:1' }] },
};

describe('sync-cluster', () => {
  it('caches instances with indexes 0..n-1 and their states, and keeps the indexes', async () => {
    const e = await suite.newEnv();
    const lrp = newLrp({ instances: 3 });
    const other = newLrp({ instances: 1, appName: 'other' });
    await desireAndConverge(e, lrp);
    await desireAndConverge(e, other);
    seedPod(e, pod(lrp, 'web-c', 0, 'running'));
    seedPod(e, pod(lrp, 'web-a', 1, 'running'));
    seedPod(e, pod(lrp, 'web-b', 2, 'unschedulable'));
    seedPod(e, pod(other, 'other-a', 0, 'running'));
    // Not an LRP pod: ignored.
    seedPod(e, stranger);

    const report = await syncWatched(e, SYNC_LOCK_TTL_MS);
    expect(report).toMatchObject({ workloads: 2, pods: 4, converging: 0, adopted: 0 });

    const cached = await e.store.cachedInstances(lrp.processGuid);
    expect(cached?.instances.sort((a, b) => a.index - b.index)).toEqual([
      { index: 0, podName: 'web-c', sinceNs: nanos(2), state: 'RUNNING' },
      { index: 1, podName: 'web-a', sinceNs: nanos(3), state: 'RUNNING' },
      {
        index: 2,
        podName: 'web-b',
        sinceNs: '0',
        state: 'UNCLAIMED',
        placementError: 'Insufficient resources: memory',
      },
    ]);
    expect(await cachedIndexes(e.store, lrp.processGuid)).toEqual({ 'web-c': 0, 'web-a': 1, 'web-b': 2 });
    expect(await cachedIndexes(e.store, other.processGuid)).toEqual({ 'other-a': 0 });
    expect(await e.store.cacheMeta()).toMatchObject({ deployments: 2, pods: 4 });

    // Again: every pod keeps its index.
    await syncWatched(e, SYNC_LOCK_TTL_MS);
    expect(await cachedIndexes(e.store, lrp.processGuid)).toEqual({ 'web-c': 0, 'web-a': 1, 'web-b': 2 });

    // web-a goes and an older-looking pod comes: the new pod takes the freed index, the others keep theirs.
    await e.kube.pods.delete(NS, 'web-a');
    removeTerminatedPods(e);
    seedPod(e, pod(lrp, 'web-0-new', -5, 'running'));
    await syncWatched(e, SYNC_LOCK_TTL_MS);
    expect(await cachedIndexes(e.store, lrp.processGuid)).toEqual({ 'web-c': 0, 'web-0-new': 1, 'web-b': 2 });

    // A terminating pod is no longer an instance.
    await e.kube.pods.delete(NS, 'web-c');
    const terminating = objects(e, 'pods').find((p) => p.metadata.name === 'web-c');
    expect(terminating?.metadata.deletionTimestamp).toBeDefined();
    await syncWatched(e, SYNC_LOCK_TTL_MS);
    expect(await cachedIndexes(e.store, lrp.processGuid)).toEqual({ 'web-0-new': 1, 'web-b': 2 });
  });

  it('runs one sync at a time', async () => {
    const e = await suite.newEnv();
    await desireAndConverge(e, newLrp());
    const results = await Promise.all([syncWatched(e, SYNC_LOCK_TTL_MS), syncWatched(e, SYNC_LOCK_TTL_MS)]);
    expect(results.filter((r) => r === undefined)).toHaveLength(1);
    expect(results.filter((r) => r !== undefined)).toHaveLength(1);

    // Held elsewhere: skipped; released: runs.
    const release = await e.store.tryLockSync('another-worker', SYNC_LOCK_TTL_MS);
    expect(release).toBeDefined();
    await expect(syncWatched(e, SYNC_LOCK_TTL_MS)).resolves.toBeUndefined();
    await release!();
    await expect(syncWatched(e, SYNC_LOCK_TTL_MS)).resolves.toBeDefined();
  });

  it('runs the schedule’s first sync and the takeover’s as one: the later asked is skipped', async () => {
    const e = await suite.newEnv();
    await desireAndConverge(e, newLrp());
    // As at a worker's start: the schedule installed (its first run due now), then the first list's.
    await e.producer.scheduleSync(3_600_000);
    await e.producer.syncNow();
    const queue = e.producer.queues[QUEUE_NAMES.sync];
    const results = await withWatchedView(e, async (view) => {
      const worker = startSyncWorker(
        { ...e.deps, cluster: view },
        {
          connection: suite.redis,
          prefix: e.prefix,
          concurrency: 1,
          lockMs: SYNC_LOCK_TTL_MS,
          callbackRetry,
        },
      );
      try {
        return await eventually(async () => {
          const done = await queue.getJobs(['completed']);
          return done.length === 2 ? done.map((j) => j.returnvalue as unknown) : undefined;
        }, 'both sync jobs to complete');
      } finally {
        await worker.close();
      }
    });
    expect(results.filter((r) => typeof r === 'object')).toHaveLength(1);
    expect(results.filter((r) => r === 'a later sync ran')).toHaveLength(1);

    // One asked for after the last began runs.
    await e.producer.syncNow();
    const next = await withWatchedView(e, (view) => syncCluster(e.deps, view, SYNC_LOCK_TTL_MS, Date.now()));
    expect(next.kind).toBe('synced');
    // One asked for before it began does not.
    const stale = await withWatchedView(e, (view) => syncCluster(e.deps, view, SYNC_LOCK_TTL_MS, 0));
    expect(stale).toEqual({ kind: 'skipped', why: 'a later sync ran' });
  });

  it('holds the sync lock for as long as its sync runs, and frees a dead holder’s soon', async () => {
    const ttlMs = 300;
    const e = await suite.newEnv();
    await desireAndConverge(e, newLrp());
    // A sync three lock lifetimes long: the lock is extended while it runs.
    const slow = syncWatched(e, ttlMs, 3 * ttlMs);
    await new Promise((r) => setTimeout(r, 2 * ttlMs));
    await expect(syncWatched(e, ttlMs)).resolves.toBeUndefined();
    await expect(slow).resolves.toBeDefined();
    expect(await e.redis.exists(e.store.keys.syncLock)).toBe(0);

    // A worker killed mid-sync leaves its lock behind, never extended: the sync runs once it lapses.
    await e.redis.set(e.store.keys.syncLock, 'killed-worker', 'PX', ttlMs);
    await expect(syncWatched(e, ttlMs)).resolves.toBeUndefined();
    await new Promise((r) => setTimeout(r, ttlMs + 100));
    await expect(syncWatched(e, ttlMs)).resolves.toBeDefined();
  });

  it('does not hide an LRP desired again while the sync runs', async () => {
    const e = await suite.newEnv();
    const lrp = newLrp();
    await desireAndConverge(e, lrp);
    await e.store.stop(lrp.processGuid, lrp.guid, lrp.version);
    await convergeLrp(e.deps, lrp.processGuid);

    // The sync has read the records (a tombstone); CC desires the LRP again before it lists the cluster.
    e.kube.before['deployments.list'] = async () => {
      await e.store.desire({ ...lrp, annotation: 'restarted' });
    };
    await syncWatched(e, SYNC_LOCK_TTL_MS);
    expect(e.kube.before['deployments.list']).toBeUndefined();
    expect((await schedulingInfos(e.store)).get(lrp.processGuid)).toBe('restarted');
    await syncWatched(e, SYNC_LOCK_TTL_MS);
    expect((await schedulingInfos(e.store)).get(lrp.processGuid)).toBe('restarted');

    // Likewise while the old Deployment is still there: the new desire's entry is not overwritten.
    const second = newLrp({ appName: 'second' });
    await desireAndConverge(e, second);
    await e.store.stop(second.processGuid, second.guid, second.version);
    e.kube.before['deployments.list'] = async () => {
      await e.store.desire({ ...second, annotation: 'second restarted' });
    };
    await syncWatched(e, SYNC_LOCK_TTL_MS);
    expect((await schedulingInfos(e.store)).get(second.processGuid)).toBe('second restarted');
  });
});
