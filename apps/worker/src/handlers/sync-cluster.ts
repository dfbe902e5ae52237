/**
 * sync-cluster: the safety net, run rarely (OPI_RESYNC_INTERVAL_MS) and after Redis lost its data, by the
 * cache writer only, from the watched state (no listing):
 *  1. Reads every record first, then the watched Deployments: a workload deleted and un-recorded in
 *     between is then already gone from the view, so it cannot be mistaken for one Redis lost.
 *  2. Writes the instances cache whole again from the view (repairs a lost or failed write).
 *  3. Reconciles: desired but missing or behind → converge; stopped but present → converge (delete);
 *     present with no record at all (Redis lost it) → rebuilt from the Deployment's annotations.
 *  4. Tasks and staging (sync-jobs.ts): reported Jobs deleted after their time, lost runs enqueued again.
 * Only one sync runs at a time (a lock in Redis).
 */

import { randomUUID } from 'node:crypto';
import { schedulingInfoJson } from '@opi/contract';
import type { RecordState } from '@opi/state';
import { type DeploymentSummary, lrpFromDeployment } from '@opi/translation';
import type { ClusterView } from '../cache/cluster-cache.js';
import type { HandlerDeps } from '../deps.js';
import { type JobSyncReport, syncJobs } from './sync-jobs.js';

export interface SyncReport {
  deployments: number;
  /** App pods in the cache it wrote. */
  pods: number;
  converging: number;
  adopted: number;
  jobs: JobSyncReport;
  durationMs: number;
}

export async function syncCluster(
  deps: HandlerDeps,
  view: ClusterView,
  lockTtlMs: number,
): Promise<SyncReport | undefined> {
  const release = await deps.store.tryLockSync(randomUUID(), lockTtlMs);
  if (!release) return undefined;
  try {
    return await syncOnce(deps, view);
  } finally {
    await release();
  }
}

async function syncOnce(deps: HandlerDeps, view: ClusterView): Promise<SyncReport> {
  const started = Date.now();
  const { store, kube } = deps;
  const records = await store.allRecordStates();
  let deploymentCount = 0;
  const inStep = new Set<RecordState>();
  const byGuid = new Map<string, DeploymentSummary>();
  for (const d of view.deployments()) {
    deploymentCount++;
    const rec = recordIfInStep(records, d);
    if ('state' in rec) inStep.add(rec);
    else byGuid.set(d.processGuid, d);
  }
  // The cache is kept by the watch; writing it whole again repairs anything Redis lost or a failed write.
  const { pods } = await view.rewriteInstances();

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
  const jobs = await syncJobs(deps, view);
  const report = {
    deployments: deploymentCount,
    pods,
    converging,
    adopted,
    jobs,
    durationMs: Date.now() - started,
  };
  deps.logger.info(report, 'sync done');
  return report;
}

/** The LRP's record when the Deployment is in step with it (desired, same generation), else the summary. */
function recordIfInStep(
  records: ReadonlyMap<string, RecordState>,
  d: DeploymentSummary,
): DeploymentSummary | RecordState {
  const rec = records.get(d.processGuid);
  return rec?.state === 'desired' && d.generation === String(rec.generation) ? rec : d;
}

/** A stopped LRP whose Deployment still exists stays in GET /apps, so CC sees it until it is gone. */
function schedEntryOf(rec: Extract<RecordState, { state: 'stopped' }>, d: DeploymentSummary): string {
  return schedulingInfoJson(rec.processGuid, rec.guid, rec.version, d.lastUpdated ?? '');
}
