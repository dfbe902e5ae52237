/**
 * sync-cluster: one pass that refreshes the cache and reconciles.
 *  1. Reads every record first, then lists the cluster: a workload deleted and un-recorded in between
 *     is then already gone from the listing, so it cannot be mistaken for one Redis lost.
 *  2. Lists the LRP Deployments and their pods (paginated) and swaps in the instances cache.
 *  3. Reconciles: desired but missing or behind → converge; stopped but present → converge (delete);
 *     present with no record at all (Redis lost it) → rebuilt from the Deployment's annotations.
 * Only one sync runs at a time (a lock in Redis), whichever worker takes the scheduled job.
 */
import { randomUUID } from 'node:crypto';
import { schedulingInfoJson } from '@opi/contract';
import type { CachedInstances, InstancesSnapshot, RecordState } from '@opi/state';
import {
  APP_SELECTOR,
  LABEL_MANAGED_BY,
  MANAGED_BY,
  type AppPodSummary,
  type DeploymentSummary,
  type ManagedPodSummary,
  type Pod,
  assignIndexMap,
  crashReportsFor,
  reportedCrashesOf,
  lrpFromDeployment,
  summarizeDeployment,
  summarizeManagedPod,
} from '@opi/translation';
import type { HandlerDeps } from '../deps.js';
import { type JobSyncReport, syncJobs } from './sync-jobs.js';

/** Every object the service manages, whatever its kind. */
const MANAGED_SELECTOR = `${LABEL_MANAGED_BY}=${MANAGED_BY}`;

/** LRPs whose previous assignments are read, and entries built, per round trip. */
const CACHE_BATCH = 1000;

export interface SyncReport {
  deployments: number;
  pods: number;
  converging: number;
  adopted: number;
  /** Crash reports enqueued. */
  crashes: number;
  jobs: JobSyncReport;
  durationMs: number;
}

export async function syncCluster(deps: HandlerDeps, lockTtlMs: number): Promise<SyncReport | undefined> {
  const release = await deps.store.tryLockSync(randomUUID(), lockTtlMs);
  if (!release) return undefined;
  try {
    return await syncOnce(deps);
  } finally {
    await release();
  }
}

async function syncOnce(deps: HandlerDeps): Promise<SyncReport> {
  const started = Date.now();
  const { store, kube } = deps;
  const records = await store.allRecordStates();
  // Each listed object is reduced as its page arrives (see sync-summaries.ts): at 100,000 apps the
  // listings, even slimmed, would not fit a small worker. A Deployment in step with its record is kept as
  // that record, already in memory; only the others (behind, stopped, unrecorded) are summarised. One
  // with no record is read again, whole, to be rebuilt.
  const deployments = await kube.listDeployments(deps.syncNamespace, APP_SELECTOR, undefined, (d) =>
    recordIfInStep(records, summarizeDeployment(d)),
  );
  // One listing of every pod the service manages, split by kind: apps here, task and staging pods for
  // syncJobs (three listings would cost three passes over what may be 100,000 pods).
  const managed = await kube.listPods(deps.syncNamespace, MANAGED_SELECTOR, undefined, (p) =>
    sharingGuid(records, summarizeManagedPod(p)),
  );
  const appPods: AppPodSummary[] = [];
  const jobPods: Pod[] = [];
  for (const p of managed.items) {
    if (p.kind === 'app') appPods.push(p);
    else jobPods.push(p.pod);
  }
  managed.items.length = 0;
  const deploymentCount = deployments.items.length;

  const crashes = await writeInstances(deps, appPods, { started, deployments: deploymentCount });

  const inStep = new Set<RecordState>();
  const byGuid = new Map<string, DeploymentSummary>();
  for (const d of deployments.items) {
    if ('state' in d) inStep.add(d);
    else byGuid.set(d.processGuid, d);
  }
  deployments.items.length = 0;

  const runId = `sync${started}`;
  let converging = 0;
  let adopted = 0;
  const converge = async (processGuid: string, why: string): Promise<void> => {
    converging++;
    deps.logger.debug({ processGuid, why }, 'sync converges');
    await deps.producer.convergeLrp({ processGuid }, runId);
  };
  const showExisting = new Map<string, string>();
  const drop: string[] = [];
  for (const [pg, rec] of records) {
    if (inStep.has(rec)) continue;
    const d = byGuid.get(pg);
    if (rec.state === 'desired') {
      await converge(pg, !d ? 'missing from the cluster' : 'behind');
    } else if (d) {
      await converge(pg, 'stopped but present');
      showExisting.set(pg, schedEntryOf(rec, d));
    } else {
      drop.push(pg);
    }
  }
  for (const [pg, listed] of byGuid) {
    if (records.has(pg)) continue;
    // Most often one desired after the records were read: its record exists now.
    if (await store.get(pg)) continue;
    const d = await kube.getDeployment(listed.namespace, listed.name);
    if (!d) continue;
    const secretName = d.spec?.template.spec?.imagePullSecrets?.[0]?.name;
    const secret = secretName ? await kube.getSecret(d.metadata.namespace ?? '', secretName) : undefined;
    const lrp = lrpFromDeployment(d, secret);
    if (lrp && (await store.adopt(lrp))) {
      adopted++;
      deps.logger.info({ processGuid: pg }, 'desired state rebuilt from the cluster');
      await converge(pg, 'rebuilt');
    }
  }
  await store.showExisting(showExisting, drop);
  const jobs = await syncJobs(deps, jobPods);
  const report = {
    deployments: deploymentCount,
    pods: appPods.length,
    converging,
    adopted,
    crashes,
    jobs,
    durationMs: Date.now() - started,
  };
  deps.logger.info(report, 'sync done');
  return report;
}

/**
 * Builds and swaps in the instances cache from the app pods, an LRP at a time: its pods get their indexes
 * (keeping the previous assignments, read per batch rather than all at once) and its entry is written
 * out at once. Enqueues the crash reports the pods are due; answers how many.
 */
async function writeInstances(
  deps: HandlerDeps,
  pods: AppPodSummary[],
  meta: { started: number; deployments: number },
): Promise<number> {
  // Sorted by LRP, each LRP's pods are one run of the array: no per-LRP lists to hold.
  pods.sort((a, b) => (a.processGuid < b.processGuid ? -1 : a.processGuid > b.processGuid ? 1 : 0));
  const runs: [number, number][] = [];
  for (let i = 0; i < pods.length;) {
    let j = i + 1;
    while (j < pods.length && pods[j]?.processGuid === pods[i]?.processGuid) j++;
    runs.push([i, j]);
    i = j;
  }
  const snapshot = deps.store.instancesSnapshot();
  let crashes = 0;
  try {
    for (let b = 0; b < runs.length; b += CACHE_BATCH) {
      const batch = runs.slice(b, b + CACHE_BATCH);
      const previous = await deps.store.cachedAssignments(batch.map(([i]) => pods[i]?.processGuid ?? ''));
      for (const [k, [i, j]] of batch.entries()) {
        const run = pods.slice(i, j);
        const pg = run[0]?.processGuid ?? '';
        const assignments = assignIndexMap(previous[k] ?? new Map<string, number>(), run);
        await snapshot.add(pg, instancesEntry(run, assignments));
        if (deps.ccInternalUrl) crashes += await enqueueCrashReports(deps, run, assignments);
      }
    }
    await snapshot.commit({
      syncedAt: Date.now(),
      durationMs: Date.now() - meta.started,
      deployments: meta.deployments,
      pods: pods.length,
    });
  } catch (e) {
    await abandon(snapshot);
    throw e;
  }
  return crashes;
}

async function abandon(snapshot: InstancesSnapshot): Promise<void> {
  // The snapshot expires by itself; a Redis that failed the sync may fail this as well.
  await snapshot.abandon().catch(() => undefined);
}

/** The LRP's record when the Deployment is in step with it (desired, same generation), else the summary. */
function recordIfInStep(
  records: ReadonlyMap<string, RecordState>,
  d: DeploymentSummary | undefined,
): DeploymentSummary | RecordState | undefined {
  const rec = d && records.get(d.processGuid);
  return rec?.state === 'desired' && d?.generation === String(rec.generation) ? rec : d;
}

/** The app pod's summary naming its LRP by the records' own string: one fewer string per pod. */
function sharingGuid(
  records: ReadonlyMap<string, RecordState>,
  p: ManagedPodSummary | undefined,
): ManagedPodSummary | undefined {
  if (p?.kind !== 'app') return p;
  const processGuid = records.get(p.processGuid)?.processGuid;
  return processGuid ? { ...p, processGuid } : p;
}

/** One LRP's cache entry, serialised at once (only the string is kept). */
function instancesEntry(run: readonly AppPodSummary[], assignments: ReadonlyMap<string, number>): string {
  const entry: CachedInstances = {
    assignments: Object.fromEntries(assignments),
    instances: run.map((p) => ({
      index: assignments.get(p.name) ?? 0,
      podName: p.name,
      sinceNs: p.sinceNs,
      state: p.state,
      ...(p.placementError ? { placementError: p.placementError } : {}),
    })),
  };
  return JSON.stringify(entry);
}

/** A stopped LRP whose Deployment still exists stays in GET /apps, so CC sees it until it is gone. */
function schedEntryOf(rec: Extract<RecordState, { state: 'stopped' }>, d: DeploymentSummary): string {
  return schedulingInfoJson(rec.processGuid, rec.guid, rec.version, d.lastUpdated ?? '');
}

/** One report per crash not yet marked on its pod; the job id (pod uid, crash count) makes repeats free. */
async function enqueueCrashReports(
  deps: HandlerDeps,
  run: readonly AppPodSummary[],
  assignments: ReadonlyMap<string, number>,
): Promise<number> {
  let n = 0;
  for (const { unreported: pod, processGuid } of run) {
    if (!pod) continue;
    const index = assignments.get(pod.metadata.name) ?? 0;
    const { reports, reportedUpTo } = crashReportsFor(pod, processGuid, index, reportedCrashesOf(pod));
    for (const r of reports) {
      await deps.producer.reportCrash({
        ...r,
        podNamespace: pod.metadata.namespace ?? '',
        podUid: pod.metadata.uid ?? '',
        reportedUpTo,
      });
      n++;
    }
  }
  return n;
}
