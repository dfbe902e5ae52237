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
import type { CachedInstances, RecordState } from '@opi/state';
import {
  ANNOTATION_GENERATION,
  ANNOTATION_LAST_UPDATED,
  ANNOTATION_PROCESS_GUID,
  APP_SELECTOR,
  LABEL_MANAGED_BY,
  LABEL_SOURCE_TYPE,
  MANAGED_BY,
  SOURCE_TYPE_APP,
  type Deployment,
  LABEL_GUID,
  LABEL_VERSION,
  type Pod,
  assignIndexMap,
  crashReportsFor,
  reportedCrashesOf,
  lrpFromDeployment,
  podToInstance,
  slimDeployment,
  slimPod,
} from '@opi/translation';
import type { HandlerDeps } from '../deps.js';
import { type JobSyncReport, syncJobs } from './sync-jobs.js';

/** Every object the service manages, whatever its kind. */
const MANAGED_SELECTOR = `${LABEL_MANAGED_BY}=${MANAGED_BY}`;

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

function processGuidOfDeployment(d: Deployment): string | undefined {
  const a = d.metadata.annotations?.[ANNOTATION_PROCESS_GUID];
  if (a) return a;
  const g = d.metadata.labels?.[LABEL_GUID];
  const v = d.metadata.labels?.[LABEL_VERSION];
  return g && v ? `${g}-${v}` : undefined;
}

function processGuidOfPod(p: Pod): string | undefined {
  const g = p.metadata.labels?.[LABEL_GUID];
  const v = p.metadata.labels?.[LABEL_VERSION];
  return g && v ? `${g}-${v}` : undefined;
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
  const previous = await store.allCachedAssignments();
  // Only what the sync reads is kept of each listed object (see slim.ts): at 100,000 apps the whole
  // listings would not fit a small worker. A Deployment with no record is read again, whole, to be rebuilt.
  const deployments = await kube.listDeployments(deps.syncNamespace, APP_SELECTOR, undefined, slimDeployment);
  // One listing of every pod the service manages, split by kind: apps here, task and staging pods for
  // syncJobs (three listings would cost three passes over what may be 100,000 pods).
  const managed = await kube.listPods(deps.syncNamespace, MANAGED_SELECTOR, undefined, slimPod);
  const pods = {
    items: managed.items.filter((p) => p.metadata.labels?.[LABEL_SOURCE_TYPE] === SOURCE_TYPE_APP),
  };
  const jobPods = managed.items.filter((p) => p.metadata.labels?.[LABEL_SOURCE_TYPE] !== SOURCE_TYPE_APP);

  const byGuid = new Map<string, Deployment>();
  for (const d of deployments.items) {
    const pg = processGuidOfDeployment(d);
    if (pg) byGuid.set(pg, d);
  }
  const podsByGuid = new Map<string, Pod[]>();
  for (const p of pods.items) {
    const pg = processGuidOfPod(p);
    // A terminating pod is no longer an instance; its replacement is.
    if (!pg || p.metadata.deletionTimestamp) continue;
    const list = podsByGuid.get(pg) ?? [];
    list.push(p);
    podsByGuid.set(pg, list);
  }

  // Each LRP's cache entry is serialised at once; only the assignments stay, as Maps (see indexes.ts).
  const cache = new Map<string, string>();
  const assigned = new Map<string, Map<string, number>>();
  for (const [pg, list] of podsByGuid) {
    const assignments = assignIndexMap(
      previous.get(pg) ?? new Map<string, number>(),
      list.map((p) => ({ name: p.metadata.name, creationTimestamp: p.metadata.creationTimestamp ?? '' })),
    );
    assigned.set(pg, assignments);
    const entry: CachedInstances = {
      assignments: Object.fromEntries(assignments),
      instances: list.map((p) => {
        const info = podToInstance(p, assignments.get(p.metadata.name) ?? 0);
        return {
          index: info.index,
          podName: info.podName,
          sinceNs: info.sinceNs.toString(),
          state: info.state,
          ...(info.placementError ? { placementError: info.placementError } : {}),
        };
      }),
    };
    cache.set(pg, JSON.stringify(entry));
  }
  previous.clear();
  const crashes = deps.ccInternalUrl ? await enqueueCrashReports(deps, podsByGuid, assigned) : 0;
  await store.writeCache(cache, {
    syncedAt: Date.now(),
    durationMs: Date.now() - started,
    deployments: deployments.items.length,
    pods: pods.items.length,
  });

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
    const d = byGuid.get(pg);
    if (rec.state === 'desired') {
      if (!d || d.metadata.annotations?.[ANNOTATION_GENERATION] !== String(rec.generation))
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
    const d = await kube.getDeployment(listed.metadata.namespace ?? '', listed.metadata.name);
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
    deployments: deployments.items.length,
    pods: pods.items.length,
    converging,
    adopted,
    crashes,
    jobs,
    durationMs: Date.now() - started,
  };
  deps.logger.info(report, 'sync done');
  return report;
}

/** A stopped LRP whose Deployment still exists stays in GET /apps, so CC sees it until it is gone. */
function schedEntryOf(rec: Extract<RecordState, { state: 'stopped' }>, d: Deployment): string {
  return schedulingInfoJson(
    rec.processGuid,
    rec.guid,
    rec.version,
    d.metadata.annotations?.[ANNOTATION_LAST_UPDATED] ?? '',
  );
}

/** One report per crash not yet marked on its pod; the job id (pod uid, crash count) makes repeats free. */
async function enqueueCrashReports(
  deps: HandlerDeps,
  podsByGuid: Map<string, Pod[]>,
  assigned: Map<string, Map<string, number>>,
): Promise<number> {
  let n = 0;
  for (const [pg, list] of podsByGuid) {
    const assignments = assigned.get(pg);
    for (const pod of list) {
      const { reports, reportedUpTo } = crashReportsFor(
        pod,
        pg,
        assignments?.get(pod.metadata.name) ?? 0,
        reportedCrashesOf(pod),
      );
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
  }
  return n;
}
