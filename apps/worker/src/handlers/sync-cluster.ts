/**
 * sync-cluster: the safety net, run rarely (OPI_RESYNC_INTERVAL_MS) and after Redis lost its data, by the
 * cache writer only, from the watched state (no listing):
 *  1. Takes the watched workloads (Deployments and StatefulSets), then reads the records a chunk at a
 *     time. A workload with no record is read again from the cluster before it is rebuilt: one deleted
 *     meanwhile is not.
 *  2. Writes the instances cache whole again from the view (repairs a lost or failed write).
 *  3. Reconciles: desired but missing or behind → converge; stopped but present → converge (delete);
 *     present with no record at all (Redis lost it) → rebuilt from the workload's annotations (unless
 *     they do not hold the whole record: then CC desires it again, as it does every missing one); an LRP
 *     with a workload of each kind (see keepOlder) → the newer deleted, then converge.
 *  4. Tasks and staging (sync-jobs.ts): reported Jobs deleted after their time, lost runs enqueued again.
 * Only one sync runs at a time (a lock in Redis), and one asked for before the last finished sync began
 * is skipped: that sync saw everything it would (the schedule's first run and the takeover's meet so).
 */

import { randomUUID } from 'node:crypto';
import { schedulingInfoOfStopped } from '@opi/state';
import type { WorkloadKind } from '@opi/domain';
import { type WorkloadSummary, lrpFromWorkload, omittedFields } from '@opi/translation';
import type { ClusterView } from '../cache/cluster-view.js';
import type { Skipped, Synced } from './outcome.js';
import type { HandlerDeps } from '../deps.js';
import { type JobSyncReport, syncJobs } from './sync-jobs.js';
import { workloadVerbs } from './workload-verbs.js';

/** A whole rewrite this recent makes the sync's own unnecessary. */
const REWRITTEN_RECENTLY_MS = 60_000;

export interface SyncReport {
  /** Workloads of either kind. */
  workloads: number;
  /** App pods in the cache it wrote. */
  pods: number;
  converging: number;
  adopted: number;
  /** Second workloads of an LRP deleted (see keepOlder). */
  twinsDeleted: number;
  jobs: JobSyncReport;
  durationMs: number;
}

/** `dueAt`: when the sync was asked for (ms); omitted, it runs in any case. */
export async function syncCluster(
  deps: HandlerDeps,
  view: ClusterView,
  lockTtlMs: number,
  dueAt?: number,
): Promise<Synced | Skipped> {
  const release = await deps.store.tryLockSync(randomUUID(), lockTtlMs);
  if (!release) return { kind: 'skipped', why: 'another sync is running' };
  try {
    const began = await deps.store.lastSyncBegan();
    if (dueAt !== undefined && began !== undefined && began >= dueAt) {
      return { kind: 'skipped', why: 'a later sync ran' };
    }
    const started = Date.now();
    const report = await syncOnce(deps, view, started);
    await deps.store.syncFinished(started);
    return { kind: 'synced', report };
  } finally {
    await release();
  }
}

async function syncOnce(deps: HandlerDeps, view: ClusterView, started: number): Promise<SyncReport> {
  const { store, kube } = deps;
  // The watched workloads by LRP; each record marks its own seen (null), so what is left has none. A
  // record read twice (see recordSummaries) finds null and is skipped.
  const byGuid = new Map<string, WorkloadSummary | null>();
  const twins: [WorkloadSummary, WorkloadSummary][] = [];
  let workloadCount = 0;
  for (const w of view.workloads()) {
    workloadCount++;
    const had = byGuid.get(w.processGuid);
    if (had) twins.push([had, w]);
    else byGuid.set(w.processGuid, w);
  }
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
  let twinsDeleted = 0;
  for (const [a, b] of twins) {
    const kept = await keepOlder(deps, a, b);
    if (!kept) continue;
    twinsDeleted++;
    byGuid.set(a.processGuid, kept);
    await converge(a.processGuid, 'had a workload of each kind');
  }
  const stoppedButPresent = new Map<string, string>();
  const drop: string[] = [];
  // A chunk of records at a time: at 100,000 LRPs the records, held all at once, were the sync's peak.
  for await (const chunk of store.recordSummaries()) {
    for (const rec of chunk) {
      const pg = rec.processGuid;
      const d = byGuid.get(pg);
      if (d === null) continue;
      if (d) byGuid.set(pg, null);
      if (rec.state === 'desired') {
        if (!d) await converge(pg, 'missing from the cluster');
        else if (d.generation !== rec.generation) await converge(pg, 'behind');
      } else if (d) {
        await converge(pg, 'stopped but present');
        stoppedButPresent.set(pg, schedulingInfoOfStopped(rec));
      } else {
        drop.push(pg);
      }
    }
  }
  for (const [pg, listed] of byGuid) {
    if (!listed) continue;
    // Most often one desired since the view was read: its record exists now.
    if (await store.get(pg)) continue;
    const d = await workloadVerbs(kube, listed.kind).get(listed.namespace, listed.name);
    if (!d) continue;
    const secretName = d.spec?.template.spec?.imagePullSecrets?.[0]?.name;
    const secret = secretName ? await kube.secrets.get(d.metadata.namespace ?? '', secretName) : undefined;
    const lrp = lrpFromWorkload(d, secret);
    if (!lrp) {
      // Not restored in part: CC desires every process missing from GET /apps again, whole.
      const omitted = omittedFields(d.metadata.annotations ?? {});
      deps.logger.warn(
        { processGuid: pg, name: listed.name, ...(omitted.length ? { omitted } : {}) },
        'the workload does not carry its whole desired state: left for CC to desire again',
      );
      continue;
    }
    if (await store.adopt(lrp)) {
      adopted++;
      deps.logger.info({ processGuid: pg }, 'desired state rebuilt from the cluster');
      await converge(pg, 'rebuilt');
    }
  }
  await store.listStoppedWhilePresent(stoppedButPresent, drop);
  const jobs = await syncJobs(deps, view);
  const report = {
    workloads: workloadCount,
    pods,
    converging,
    adopted,
    twinsDeleted,
    jobs,
    durationMs: Date.now() - started,
  };
  deps.logger.info(report, 'sync done');
  return report;
}

/**
 * An LRP runs as one workload; it can have one of each kind only when a desire after a Redis flush made
 * the configured kind fresh (without reading) while the other kind, made before the mode changed, still
 * ran. The older is kept (it has the running instances; an LRP is never converted in place) and the newer
 * deleted. Both are read again first: one already gone settles it. Returns the summary kept, or
 * undefined when nothing was deleted.
 */
async function keepOlder(
  deps: HandlerDeps,
  a: WorkloadSummary,
  b: WorkloadSummary,
): Promise<WorkloadSummary | undefined> {
  const read = async (s: WorkloadSummary) => ({
    s,
    o: await workloadVerbs(deps.kube, s.kind).get(s.namespace, s.name),
  });
  const [x, y] = [await read(a), await read(b)];
  if (!x.o || !y.o) return undefined;
  const created = (o: NonNullable<typeof x.o>): string => o.metadata.creationTimestamp ?? '';
  const configured: WorkloadKind = deps.workloadKind ?? 'deployment';
  // Same second: the configured kind stays (what a new LRP gets).
  const [keep, drop] =
    created(x.o) < created(y.o) || (created(x.o) === created(y.o) && x.s.kind === configured)
      ? [x, y]
      : [y, x];
  await workloadVerbs(deps.kube, drop.s.kind).delete(drop.s.namespace, drop.s.name);
  deps.logger.warn(
    { processGuid: a.processGuid, kept: keep.s.kind, deleted: drop.s.kind },
    'an LRP had a workload of each kind: the newer deleted',
  );
  return keep.s;
}
