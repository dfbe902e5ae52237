/**
 * sync-cluster: the safety net, run rarely (OPI_RESYNC_INTERVAL_MS) and after Redis lost its data, by the
 * cache writer only, from the watched state (no listing):
 *  1. Takes the watched Deployments, then reads the records a chunk at a time. A Deployment with no
 *     record is read again from the cluster before it is rebuilt: one deleted meanwhile is not.
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

/** A whole rewrite this recent makes the sync's own unnecessary. */
const REWRITTEN_RECENTLY_MS = 60_000;

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
  // The watched Deployments by LRP; each record takes its own out, so what is left has none.
  const byGuid = new Map<string, DeploymentSummary>();
  for (const d of view.deployments()) byGuid.set(d.processGuid, d);
  const deploymentCount = byGuid.size;
  // The cache is kept by the watch; writing it whole again repairs what a Redis restart lost of it
  // (not again right after the takeover's first write).
  const { pods } = await view.rewriteInstances({ unlessWithinMs: REWRITTEN_RECENTLY_MS });

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
  // A chunk of records at a time: at 100,000 LRPs the records, held all at once, were the sync's peak.
  for await (const chunk of store.recordStates()) {
    for (const rec of chunk) {
      const pg = rec.processGuid;
      const d = byGuid.get(pg);
      byGuid.delete(pg);
      if (rec.state === 'desired') {
        if (!d) await converge(pg, 'missing from the cluster');
        else if (d.generation !== String(rec.generation)) await converge(pg, 'behind');
      } else if (d) {
        await converge(pg, 'stopped but present');
        showExisting.set(pg, schedEntryOf(rec, d));
      } else {
        drop.push(pg);
      }
    }
  }
  for (const [pg, listed] of byGuid) {
    // Most often one desired since the view was read: its record exists now.
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

/** A stopped LRP whose Deployment still exists stays in GET /apps, so CC sees it until it is gone. */
function schedEntryOf(rec: Extract<RecordState, { state: 'stopped' }>, d: DeploymentSummary): string {
  return schedulingInfoJson(rec.processGuid, rec.guid, rec.version, d.lastUpdated ?? '');
}
