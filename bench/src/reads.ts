/**
 * The reads scenario: GET /apps and an app's instances answered from the cache, against the direct
 * lists a cache-less server would make, and the memory it takes, at each size for both workload kinds.
 */
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { Redis } from 'ioredis';
import { AppsV1Api, CoreV1Api, KubeConfig } from '@kubernetes/client-node';
import { schedulingInfoJson, schedulingInfosBody } from '@opi/contract';
import type { WorkloadKind } from '@opi/domain';
import type { Simulator } from '@opi/kube-sim';
import { StateStore } from '@opi/state';
import {
  ANNOTATION_LAST_UPDATED,
  ANNOTATION_PROCESS_GUID,
  APP_SELECTOR,
  LABEL_GUID,
  LABEL_VERSION,
} from '@opi/translation';
import { uuid } from '@opi/contract/testing';
import { VERSION, desireBody } from './bodies.js';
import { NAMESPACE, log, percentile, sleep } from './common.js';
import { loadInChild } from './load.js';
import { plan } from './options.js';
import { type Child, deathOf, ended, rssBytes, rssSampler, stopChild } from './processes.js';
import type { Row } from './report.js';
import { podCount, podsPer, readsLrp, seedReads } from './seeding.js';
import {
  WORKER_NODE_ARGS,
  awaitFirstSync,
  deletePrefix,
  firstListMs,
  startApi,
  startSim,
  startWorker,
  uniquePrefix,
  usedMemory,
} from './service.js';

/** The size labels of the StatefulSet pass say so; the Deployment pass keeps the labels of earlier runs. */
const KIND_SUFFIX: Record<WorkloadKind, string> = { deployment: '', statefulset: ' (StatefulSets)' };

/** The memory figures of one size, for latest.json. */
export interface MemoryRow {
  kind: WorkloadKind;
  size: number;
  apiRssBytes: number;
  workerPeakRssBytes: number;
  redisBytesPerLrp: number;
}

export interface ReadsResult {
  rows: Row[];
  memory: MemoryRow[];
}

async function timed(fn: () => Promise<unknown>, runs: number): Promise<number[]> {
  const out: number[] = [];
  for (let i = 0; i < runs; i++) {
    const t = performance.now();
    await fn();
    out.push(performance.now() - t);
  }
  return out;
}

/** A latency row: ours against the baseline's, the ratio as how many times faster ours is. */
function faster(
  scenario: string,
  size: string,
  metric: string,
  ours: number,
  baseline: number,
  target: { maxMs?: number; minFactor: number },
  note?: string,
): Row {
  const ratio = baseline / ours;
  const met = (target.maxMs === undefined || ours <= target.maxMs) && ratio >= target.minFactor;
  return {
    scenario,
    size,
    metric,
    ours,
    baseline,
    unit: 'ms',
    ratio,
    ratioMeaning: '× faster',
    target: `${target.maxMs !== undefined ? `≤ ${target.maxMs} ms, ` : ''}≥ ${target.minFactor}× faster`,
    met,
    ...(note ? { note } : {}),
  };
}

/**
 * Waits until the worker's first list has written the cache with `size` workloads (the snapshot's
 * meta) and its first reconcile is done, sampling the worker's RSS meanwhile; the peak.
 */
async function awaitFirstList(
  state: StateStore,
  worker: Child,
  size: number,
  after: number,
  kind: WorkloadKind,
): Promise<number> {
  const sampler = rssSampler(() => [worker.pid], 100);
  const deadline = Date.now() + 600_000;
  try {
    for (;;) {
      const { exitCode, signalCode } = worker.proc;
      if (exitCode !== null || signalCode !== null) {
        throw new Error(
          `the worker died (${signalCode ?? `exit ${exitCode}`}) during the first list of ${size} LRPs` +
            ` (node flags: ${WORKER_NODE_ARGS.join(' ') || 'none'}); its log is ${worker.logFile}`,
        );
      }
      const meta = await state.cacheMeta();
      if (meta && meta.syncedAt > after && meta[`${kind}s`] === size) {
        const listed = await firstListMs(worker);
        log(
          `first list of ${size} LRPs, ${meta.pods} pods applied in ${Number.isNaN(listed) ? '?' : listed} ms ` +
            `(the cache's snapshot written in ${meta.durationMs} ms)`,
        );
        // Then the takeover's reconcile: the reads measure the API beside a worker at rest, as it mostly is.
        const synced = await awaitFirstSync(worker, deadline - Date.now());
        if (!synced && !ended(worker)) throw new Error(`no reconcile after the first list of ${size} LRPs`);
        return sampler.peak(worker.pid);
      }
      if (Date.now() > deadline) throw new Error(`no first list of ${size} Deployments within 10 minutes`);
      await sleep(100);
    }
  } finally {
    sampler.stop();
  }
}

async function schedulingInfos(
  base: string,
  apps: AppsV1Api,
  size: number,
  kind: WorkloadKind,
): Promise<Row[]> {
  const first = await fetch(`${base}/apps`);
  const text = await first.text();
  const count = (JSON.parse(text) as { desired_lrp_scheduling_infos: unknown[] }).desired_lrp_scheduling_infos
    .length;
  if (count !== size) throw new Error(`GET /apps returned ${count} scheduling infos, expected ${size}`);
  const ours = await loadInChild({ url: `${base}/apps`, connections: 1, duration: plan.readSeconds });
  if (ours.bad) throw new Error(`GET /apps: ${ours.bad} failed requests`);
  let directBytes = 0;
  const direct = async (): Promise<void> => {
    const infos: string[] = [];
    let token: string | undefined;
    directBytes = 0;
    do {
      const query = { namespace: NAMESPACE, labelSelector: APP_SELECTOR, limit: 500, _continue: token };
      const page =
        kind === 'deployment'
          ? await apps.listNamespacedDeployment(query)
          : await apps.listNamespacedStatefulSet(query);
      for (const d of page.items) {
        const a = d.metadata?.annotations ?? {};
        const labels = d.metadata?.labels ?? {};
        const pg = a[ANNOTATION_PROCESS_GUID];
        if (pg) {
          infos.push(
            schedulingInfoJson(
              pg,
              labels[LABEL_GUID] ?? '',
              labels[LABEL_VERSION] ?? '',
              a[ANNOTATION_LAST_UPDATED] ?? '',
            ),
          );
        }
      }
      token = page.metadata?._continue;
    } while (token);
    directBytes = schedulingInfosBody(infos).length;
    if (infos.length !== size) throw new Error(`direct list found ${infos.length}, expected ${size}`);
  };
  const runs = await timed(direct, size >= 100_000 ? 2 : plan.listRuns);
  const label = `${size >= 1000 ? `${size / 1000}k` : String(size)}${KIND_SUFFIX[kind]}`;
  const scenario = 'GET /apps (scheduling infos)';
  const p50 = faster(
    scenario,
    label,
    'p50',
    ours.p50,
    percentile(runs, 50),
    { maxMs: size >= 100_000 ? 100 : undefined, minFactor: 20 },
    `${ours.total} requests vs ${runs.length} paginated lists`,
  );
  const p99 = faster(scenario, label, 'p99', ours.p99, percentile(runs, 99), { minFactor: 1 });
  const bytes: Row = {
    scenario: 'GET /apps (scheduling infos)',
    size: label,
    metric: 'response bytes',
    ours: text.length,
    baseline: directBytes,
    unit: 'B',
    ratio: text.length / directBytes,
    ratioMeaning: '× the direct body',
    target: '—',
    met: undefined,
  };
  return [p50, p99, bytes];
}

async function instances(base: string, core: CoreV1Api, size: number, kind: WorkloadKind): Promise<Row[]> {
  const n = Math.floor(size / 2);
  const lrp = readsLrp(n);
  const path = `/apps/${lrp.guid}/${lrp.version}/instances`;
  const check = await fetch(`${base}${path}`);
  const body = (await check.json()) as { instances?: { state?: string }[] };
  const running = body.instances?.filter((i) => i.state === 'RUNNING').length ?? 0;
  if (check.status !== 200 || running !== podsPer(n)) {
    throw new Error(`GET ${path} answered ${check.status} ${JSON.stringify(body)}`);
  }
  const ours = await loadInChild({ url: `${base}${path}`, connections: 1, duration: plan.readSeconds });
  if (ours.bad) throw new Error(`GET instances: ${ours.bad} failed requests`);
  // What a cache-less server does per lookup: the app's pods by label, then each pod's events (at once).
  const direct = async (): Promise<void> => {
    const pods = await core.listNamespacedPod({
      namespace: NAMESPACE,
      labelSelector: `${LABEL_GUID}=${lrp.guid},${LABEL_VERSION}=${lrp.version}`,
    });
    if (pods.items.length !== podsPer(n)) throw new Error(`direct: ${pods.items.length} pods`);
    await Promise.all(
      pods.items.map((p) =>
        core.listNamespacedEvent({
          namespace: NAMESPACE,
          fieldSelector: `involvedObject.kind=Pod,involvedObject.name=${p.metadata?.name ?? ''}`,
        }),
      ),
    );
  };
  await direct();
  const runs = await timed(direct, plan.podRuns);
  const label = `${size / 1000}k LRPs, ${podCount(size) / 1000}k pods${KIND_SUFFIX[kind]}`;
  return [
    faster('GET instances', label, 'p50', ours.p50, percentile(runs, 50), { maxMs: 5, minFactor: 20 }),
    faster('GET instances', label, 'p99', ours.p99, percentile(runs, 99), { minFactor: 1 }),
  ];
}

/** What a reads pass measures against: the cluster, the records and the API, all of one workload kind. */
interface ReadsTarget {
  kind: WorkloadKind;
  results: string;
  prefix: string;
  sim: Simulator;
  state: StateStore;
  redis: Redis;
  api: Child;
  /** Where the pass notes the processes it starts, to be stopped should it fail. */
  children: Child[];
}

/**
 * The reads at each size: LRPs seeded as converged workloads of the kind with their pods, a worker that
 * lists them once and writes the cache, then GET /apps and instances against direct lists, and memory.
 */
async function readsPass(t: ReadsTarget): Promise<ReadsResult> {
  const { kind, results, prefix, sim, state, redis, api, children } = t;
  const rows: Row[] = [];
  const memory: MemoryRow[] = [];
  const kc = new KubeConfig();
  kc.loadFromString(sim.kubeconfig());
  const apps = kc.makeApiClient(AppsV1Api);
  const core = kc.makeApiClient(CoreV1Api);
  const base = `http://127.0.0.1:${api.port}`;
  const rssIdle = rssBytes(api.pid);
  const redisBefore = await usedMemory(redis);
  const kubeconfig = join(results, `kubeconfig-${kind}.yaml`);
  await writeFile(kubeconfig, sim.kubeconfig());
  let seeded = 0;
  for (const size of plan.appsSizes) {
    log(`seeding ${seeded} → ${size} LRPs, ${podCount(size)} pods`);
    await seedReads(sim, state, seeded, size, kind);
    seeded = size;
    // A worker per size, started after the seeding, as in production: it takes the Lease, lists the
    // cluster once, writes the cache, then follows the watch. Its first list is what is measured (the
    // next size's seeding would otherwise reach it as 90k watch events).
    const startedAt = Date.now();
    const worker = await startWorker(
      prefix,
      {
        OPI_WORKLOAD_KIND: kind,
        KUBECONFIG: kubeconfig,
        // The cache follows the watch; the resync only reconciles drift, reading every record and the
        // watched state. None runs during the reads, which measure the API.
        OPI_RESYNC_INTERVAL_MS: '3600000',
      },
      join(results, `worker-${kind}-${size}.log`),
    );
    children.push(worker);
    const workerPeak = await awaitFirstList(state, worker, size, startedAt, kind);
    log(`GET /apps at ${size}`);
    rows.push(...(await schedulingInfos(base, apps, size, kind)));
    if (size === plan.instancesSize) {
      log(`instances at ${size}`);
      rows.push(...(await instances(base, core, size, kind)));
    }
    const rss = rssBytes(api.pid);
    const died = ended(worker);
    if (died) log(`the worker died after its first list: ${deathOf(worker)}`);
    const redisPer = ((await usedMemory(redis)) - redisBefore) / size;
    memory.push({ kind, size, apiRssBytes: rss, workerPeakRssBytes: workerPeak, redisBytesPerLrp: redisPer });
    const label = `${size / 1000}k${KIND_SUFFIX[kind]}`;
    const requestBytes = JSON.stringify(desireBody(uuid(0, 'be'), VERSION)).length;
    const big = size >= 100_000;
    rows.push({
      scenario: 'memory: Redis used_memory per LRP',
      size: label,
      metric: 'bytes/LRP',
      ours: redisPer,
      baseline: requestBytes,
      unit: 'B/LRP',
      ratio: redisPer / requestBytes,
      ratioMeaning: '× the desire body',
      target: '≤ 2 KB',
      met: redisPer <= 2048,
      note: 'records, scheduling infos and the instances cache; no job history',
    });
    rows.push({
      scenario: 'memory: API process RSS',
      size: label,
      metric: 'RSS after GET /apps',
      ours: rss,
      baseline: rssIdle,
      unit: 'B',
      ratio: rss / rssIdle,
      ratioMeaning: '× idle RSS',
      target: big ? '≤ 250 MB' : '—',
      met: big ? rss <= 250e6 : undefined,
    });
    rows.push({
      scenario: 'memory: worker process RSS',
      size: label,
      metric: 'peak RSS, first list and reconcile',
      ours: workerPeak,
      baseline: rssIdle,
      unit: 'B',
      ratio: workerPeak / rssIdle,
      ratioMeaning: '× idle API RSS',
      target: big ? '≤ 250 MB' : '—',
      // A worker that died meanwhile (out of heap at the shipped flags) did not stay within it either.
      met: died ? false : big ? workerPeak <= 250e6 : undefined,
      ...(died ? { note: `during the reads, the ${deathOf(worker)}` } : {}),
    });
    // Stopped before the next seeding, and before the ingest: nothing may converge its new desires
    // into this cluster while it is measured.
    await stopChild(worker);
  }
  return { rows, memory };
}

/** The StatefulSet pass on a cluster, records and API of its own, beside the Deployment one. */
async function statefulSetReads(results: string, redis: Redis): Promise<ReadsResult> {
  const prefix = uniquePrefix('sts');
  const sim = await startSim(NAMESPACE, 13);
  const children: Child[] = [];
  try {
    const api = await startApi(prefix, join(results, 'api-statefulset.log'));
    children.push(api);
    const state = new StateStore(redis, prefix);
    return await readsPass({ kind: 'statefulset', results, prefix, sim, state, redis, api, children });
  } finally {
    for (const c of children) await stopChild(c);
    await deletePrefix(redis, prefix);
    await sim.close();
  }
}

/**
 * Both passes: the Deployment one against the run's own cluster, records and API (`t`), then the
 * StatefulSet one on its own.
 */
export async function reads(t: Omit<ReadsTarget, 'kind'>): Promise<ReadsResult> {
  const deployments = await readsPass({ ...t, kind: 'deployment' });
  const statefulSets = await statefulSetReads(t.results, t.redis);
  return {
    rows: [...deployments.rows, ...statefulSets.rows],
    memory: [...deployments.memory, ...statefulSets.memory],
  };
}
