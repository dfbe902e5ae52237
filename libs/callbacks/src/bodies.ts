/**
 * The JSON bodies CC expects, built from domain outcomes (see docs/api.md and docs/cloud-controller.md). Pure
 * functions; every string is cut to what CC stores (libs/domain/src/cc-limits.ts), whatever the outcome
 * recorded (an outcome stored by an older version may be longer).
 */
import {
  type CrashReport,
  DIEGO_REASON_MAX,
  STAGING_MESSAGE_MAX,
  type StagingErrorId,
  type StagingOutcome,
  type TaskOutcome,
  boundText,
} from '@opi/domain';
import { CallbackUrlError } from './errors.js';
import { parseCallbackUrl } from './url.js';

export interface TaskCompletedBody {
  task_guid: string;
  failed: boolean;
  failure_reason: string;
}

export type StagingCompletedBody =
  | {
      result: {
        lifecycle_type: 'docker' | 'buildpack';
        lifecycle_metadata: Record<string, unknown>;
        process_types: Record<string, string>;
        execution_metadata: string;
      };
    }
  | { error: { id: StagingErrorId; message: string } };

export interface CrashReportBody {
  instance: string;
  index: number;
  cell_id: string;
  reason: string;
  exit_status: number;
  exit_description: string;
  crash_count: number;
  /** Unix nanoseconds, as Diego's `since`. */
  crash_timestamp: number;
}

/** `POST <completion_callback>` body of a task. A success never carries a reason. */
export function taskCompletedBody(taskGuid: string, outcome: TaskOutcome): TaskCompletedBody {
  return {
    task_guid: taskGuid,
    failed: outcome.failed,
    failure_reason: outcome.failed ? boundText(outcome.failureReason, DIEGO_REASON_MAX) : '',
  };
}

/**
 * `build_completed` body: the result on success, else the error id (StagingError unless the outcome names
 * another) and a message CC can store after its `Staging error: ` prefix.
 */
export function stagingCompletedBody(outcome: StagingOutcome): StagingCompletedBody {
  if (outcome.failed) {
    const id = outcome.errorId ?? 'StagingError';
    return { error: { id, message: boundText(outcome.message, STAGING_MESSAGE_MAX) } };
  }
  // Copied field by field so nothing else on the outcome object leaks into CC's build record.
  const r = outcome.result;
  return {
    result: {
      lifecycle_type: r.lifecycle_type,
      lifecycle_metadata: r.lifecycle_metadata,
      process_types: r.process_types,
      execution_metadata: r.execution_metadata,
    },
  };
}

/** `/internal/v4/apps/<process_guid>/crashed` body. Kubernetes has no Diego cell, so cell_id is empty. */
export function crashReportBody(r: CrashReport): CrashReportBody {
  return {
    instance: r.instance,
    index: r.index,
    cell_id: '',
    reason: r.reason,
    exit_status: r.exitStatus,
    exit_description: boundText(r.exitDescription, DIEGO_REASON_MAX),
    crash_count: r.crashCount,
    // Whole seconds times 10⁹ is an exact double until the year 2116.
    crash_timestamp: r.crashTimestamp * 1_000_000_000,
  };
}

/**
 * `<ccInternalUrl>/internal/v4/apps/<process_guid>/crashed`. The base may carry a path prefix and
 * userinfo (kept: CC's internal API may take Basic credentials in the URL); trailing slashes are dropped.
 */
export function crashReportUrl(ccInternalUrl: string, processGuid: string): string {
  // URL parsers resolve "." and ".." segments (even percent-encoded), so those cannot name a process.
  if (processGuid === '' || processGuid === '.' || processGuid === '..') {
    throw new CallbackUrlError('crash report needs a process guid');
  }
  const base = parseCallbackUrl(ccInternalUrl);
  if (base.search !== '' || base.hash !== '') {
    // A query on the base would end up after /crashed, where CC does not look for it.
    throw new CallbackUrlError('CC internal API URL must not have a query or fragment');
  }
  const prefix = base.pathname.replace(/\/+$/, '');
  base.pathname = `${prefix}/internal/v4/apps/${encodeURIComponent(processGuid)}/crashed`;
  return base.href;
}
