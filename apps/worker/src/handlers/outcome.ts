/**
 * What a handler did, as data: the worker counts metrics by its `kind` (workers.ts), and `resultOf` turns
 * it into the job's result, the line operators read on the dashboard and in the "job done" log.
 */
import type { DeleteResult } from '@opi/kube';
import type { WorkloadKind } from '@opi/domain';
import type { SyncReport } from './sync-cluster.js';

/** The record the job is about is gone (stopped and confirmed, expired, or lost with Redis). */
export interface NoRecord {
  kind: 'no-record';
}

/** Why a handler found nothing to do. */
export type SkipReason =
  | 'lrp no longer desired'
  | 'superseded'
  | 'no statefulset'
  | 'nothing to run: cancelled or finished'
  | 'already staged'
  | 'not finished'
  | 'crash reports are off (no CC_INTERNAL_URL)'
  | 'another sync is running'
  | 'a later sync ran'
  | 'already reported'
  | 'already reported (its Job says so)'
  | 'already reported (its Job marked now)';

export interface Skipped {
  kind: 'skipped';
  why: SkipReason;
}

/** An LRP's workload made to match its desired record. */
export interface Converged {
  kind: 'converged';
  /** `repaired`: written again with the record's generation, after the watch saw it changed by hand. */
  action: 'created' | 'updated' | 'repaired' | 'unchanged';
  workload: WorkloadKind;
  namespace: string;
  name: string;
  generation: number;
}

/** A stopped LRP's workloads deleted. */
export interface Stopped {
  kind: 'stopped';
  deployments: number;
  statefulsets: number;
}

/** One instance's pod: `already gone` when no pod of the LRP has that name. */
export interface InstanceStopped {
  kind: 'instance-stopped';
  pod: string;
  result: DeleteResult | 'already gone';
}

/** One check of a StatefulSet's rollout (see settle-rollout.ts). */
export interface RolloutChecked {
  kind: 'rollout-checked';
  state: 'rolled-out' | 'not-observed' | 'rolling';
  /** Old-revision pods that were not ready, deleted. */
  deleted: number;
  /** Old-revision pods that are ready, left to the controller. */
  waiting: number;
  /** No further check follows. */
  last: boolean;
}

export interface Synced {
  kind: 'synced';
  report: SyncReport;
}

/** A task's or staging's Job exists (created now, or by an earlier run). */
export interface JobCreated {
  kind: 'job-created';
  namespace: string;
  name: string;
}

export interface JobDeleted {
  kind: 'job-deleted';
  result: DeleteResult;
}

/** A docker staging's result, recorded and queued for its report. */
export interface Staged {
  kind: 'staged';
}

/** A docker staging that failed for the user's reason (the registry's answer), recorded and queued. */
export interface StagingFailed {
  kind: 'staging-failed';
  message: string;
}

/** CC took a report. */
export interface Delivered {
  kind: 'delivered';
  status: number;
}

/** CC refused a report (4xx): it will never take it, so the job is done and not retried. */
export interface Refused {
  kind: 'refused';
  status: number;
}

export type Outcome =
  | NoRecord
  | Skipped
  | Converged
  | Stopped
  | InstanceStopped
  | RolloutChecked
  | Synced
  | JobCreated
  | JobDeleted
  | Staged
  | StagingFailed
  | Delivered
  | Refused;

/** What a job returns to BullMQ: a short line, or a sync's counts as they are. */
export type JobResult = string | SyncReport;

export function resultOf(outcome: Outcome): JobResult {
  switch (outcome.kind) {
    case 'no-record':
      return 'no record';
    case 'skipped':
      return outcome.why;
    case 'converged': {
      const { action, workload, namespace, name, generation } = outcome;
      return `${action} ${workload} ${namespace}/${name} (generation ${generation})`;
    }
    case 'stopped': {
      const sts = outcome.statefulsets > 0 ? `, ${outcome.statefulsets} statefulset(s)` : '';
      return `stopped: ${outcome.deployments} deployment(s)${sts} deleted`;
    }
    case 'instance-stopped':
      return `pod ${outcome.pod} ${outcome.result}`;
    case 'rollout-checked':
      return rolloutLine(outcome);
    case 'synced':
      return outcome.report;
    case 'job-created':
      return `job ${outcome.namespace}/${outcome.name}`;
    case 'job-deleted':
      return `job ${outcome.result}`;
    case 'staged':
      return 'staged';
    case 'staging-failed':
      return `staging failed: ${outcome.message}`;
    case 'delivered':
      return `delivered (${outcome.status})`;
    case 'refused':
      return `refused by CC (${outcome.status})`;
  }
}

function rolloutLine(check: RolloutChecked): string {
  if (check.state === 'rolled-out') return 'rolled out';
  const done =
    check.state === 'rolling'
      ? `deleted ${check.deleted} old pod(s) not ready, ${check.waiting} ready left to the controller`
      : 'not observed by the controller yet';
  return check.last ? `${done}; last check` : done;
}
