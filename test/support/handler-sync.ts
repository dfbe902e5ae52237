/**
 * For the handler tests around the sync: one sync as the cache writer runs it, what it left in Redis
 * (GET /apps, queued converges, cached instance indexes), and pods as a ReplicaSet and kubelet leave them.
 */
import type { DesiredLrp } from '@opi/domain';
import type { Pod } from '@opi/kube-objects';
import { type JobProducer, QUEUE_NAMES } from '@opi/queue';
import { CacheWriter, type StateStore } from '@opi/state';
import { labelsFor, lrpToDeployment } from '@opi/translation';
import {
  ClusterCache,
  type ClusterView,
  type SyncReport,
  onJobChanged,
  syncCluster,
} from '../../apps/worker/src/index.js';
import { UNSCHEDULABLE } from '../../libs/translation/src/pod.fixture.js';
import { type Env, NS, RUN_AS_NON_ROOT, logger } from './handler-deps.js';

/**
 * The cluster as the cache writer watches it (a ClusterCache over the env's port, its first list applied
 * and written), given to `use` as the sync's view; `slowMs` makes its cache rewrite that slow. Stops the
 * watch afterwards.
 */
export async function withWatchedView<T>(
  e: Env,
  use: (view: ClusterView) => Promise<T>,
  slowMs = 0,
): Promise<T> {
  const token = 1;
  const writer = new CacheWriter(e.redis, e.prefix);
  await writer.claim(token);
  const cache = new ClusterCache(
    {
      kube: e.deps.kube,
      store: e.store,
      writer,
      logger,
      namespace: e.deps.syncNamespace,
      homeNamespace: NS,
      reportCrashes: e.deps.ccInternalUrl ? e.producer : undefined,
      onJob: async (job, pods) => {
        await onJobChanged(e.deps, job, pods);
      },
    },
    token,
  );
  cache.start();
  try {
    await cache.settled();
    const result = await use({
      workloads: () => cache.workloads(),
      jobs: () => cache.jobs(),
      podsOfJob: (ns, name) => cache.podsOfJob(ns, name),
      rewriteInstances: async () => {
        await new Promise((r) => setTimeout(r, slowMs));
        return cache.rewriteInstances();
      },
    });
    await cache.settled();
    return result;
  } finally {
    await cache.stop();
  }
}

/** One sync as the cache writer runs it, from the watched view; undefined when it was skipped. */
export async function syncWatched(e: Env, lockTtlMs: number, slowMs = 0): Promise<SyncReport | undefined> {
  const outcome = await withWatchedView(e, (view) => syncCluster(e.deps, view, lockTtlMs), slowMs);
  return outcome.kind === 'synced' ? outcome.report : undefined;
}

/** GET /apps as CC reads it: process guid → annotation. */
export async function schedulingInfos(store: StateStore): Promise<Map<string, string>> {
  const infos = (await store.schedulingInfos()).entries.map(
    (e) => JSON.parse(e) as { desired_lrp_key: { process_guid: string }; annotation: string },
  );
  return new Map(infos.map((s) => [s.desired_lrp_key.process_guid, s.annotation]));
}

/** The process guids of converge jobs waiting in the LRP queue. */
export async function pendingConverges(producer: JobProducer): Promise<string[]> {
  const jobs = await producer.queues[QUEUE_NAMES.lrp].getJobs(['waiting', 'prioritized', 'delayed']);
  return jobs
    .filter((j) => j.name === 'converge-lrp')
    .map((j) => (j.data as { processGuid: string }).processGuid)
    .sort();
}

/** podName → index of the cached instances of an LRP. */
export async function cachedIndexes(store: StateStore, processGuid: string): Promise<Record<string, number>> {
  const cached = await store.cachedInstances(processGuid);
  return Object.fromEntries((cached?.instances ?? []).map((i) => [i.podName, i.index]));
}

const T0 = Date.UTC(2024, 4, 1, 10, 0, 0);
/** T0 + seconds, as a metav1.Time. */
export const at = (seconds: number) => new Date(T0 + seconds * 1000).toISOString().replace(/\.\d{3}Z$/, 'Z');
/** T0 + seconds in Unix nanoseconds, as the cache writes `since`. */
export const nanos = (seconds: number) => `${(T0 / 1000 + seconds).toString()}000000000`;

/** A pod of the LRP as its ReplicaSet and the kubelet would leave it, created at T0 + createdAt s. */
export function pod(
  lrp: DesiredLrp,
  name: string,
  createdAt: number,
  kind: 'running' | 'unschedulable',
): Pod {
  const template = lrpToDeployment(lrp, { runAsNonRoot: RUN_AS_NON_ROOT }).spec.template;
  const metadata = {
    name,
    labels: { ...labelsFor(lrp), 'pod-template-hash': '5d8f7c9b4' },
    ...(template.metadata?.annotations ? { annotations: template.metadata.annotations } : {}),
    creationTimestamp: at(createdAt),
  };
  if (kind === 'unschedulable') {
    return { metadata, ...(template.spec ? { spec: template.spec } : {}), status: UNSCHEDULABLE };
  }
  return {
    metadata,
    ...(template.spec ? { spec: { ...template.spec, nodeName: 'node-1' } } : {}),
    status: {
      phase: 'Running',
      startTime: at(createdAt + 1),
      conditions: [
        { type: 'PodScheduled', status: 'True' },
        { type: 'Ready', status: 'True' },
      ],
      containerStatuses: [
        {
          name: 'opi',
          ready: true,
          started: true,
          restartCount: 0,
          image: lrp.image,
          imageID: `${lrp.image}@sha256:0123`,
          state: { running: { startedAt: at(createdAt + 2) } },
        },
      ],
    },
  };
}
