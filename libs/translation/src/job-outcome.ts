/**
 * How a task's or a staging's Job ended, as CC is told: read from the Job and its pods only, so any worker
 * (or the same one after a restart) reaches the same outcome.
 */
import type { StagingOutcome, TaskOutcome } from '@opi/domain';
import { containerStatusOf, latestTermination } from './container-status.js';
import { CRASH_WAITING_REASONS, placementErrorOf } from './instances.js';
import type { ContainerStateTerminated, Job, JobCondition, Pod } from '@opi/kube-objects';
import { describeCondition, describeExit, exitWords, oneLine } from './diego-words.js';
import { stagingErrorIdOf, stagingFailed, usefulLine } from './staging-failure.js';
import { STAGING_CONTAINER, TERMINATION_MESSAGE_PATH } from './staging-job.js';
import { ANNOTATION_TASK_NAME, TASK_CONTAINER } from './task-job.js';
import { unixNanos } from './time.js';

export type JobResult = 'succeeded' | 'failed';

function trueCondition(job: Job, types: readonly string[]): JobCondition | undefined {
  return job.status?.conditions?.find((c) => types.includes(c.type) && c.status === 'True');
}

/**
 * `FailureTarget` and `SuccessCriteriaMet` (Kubernetes ≥ 1.31) settle the outcome before `Failed` and
 * `Complete`, which wait for the pods to terminate; reporting on the first saves CC that wait.
 */
const FAILED = ['Failed', 'FailureTarget'];
const SUCCEEDED = ['Complete', 'SuccessCriteriaMet'];

/**
 * Whether the Job has finished, and how; undefined while it runs. The conditions decide; the counts are the
 * fallback for a status written before its condition (the limits default to the service's Jobs': one
 * completion, no retry).
 */
export function jobFinished(job: Job): JobResult | undefined {
  if (trueCondition(job, FAILED)) return 'failed';
  if (trueCondition(job, SUCCEEDED)) return 'succeeded';
  const { succeeded = 0, failed = 0 } = job.status ?? {};
  if (succeeded >= (job.spec?.completions ?? 1)) return 'succeeded';
  if (failed > (job.spec?.backoffLimit ?? 0)) return 'failed';
  return undefined;
}

interface Ended {
  pod: Pod;
  terminated: ContainerStateTerminated;
}

function finishedNs(e: Ended): bigint {
  return unixNanos(e.terminated.finishedAt) ?? unixNanos(e.pod.metadata.creationTimestamp) ?? -1n;
}

/** The latest run of `container` that exited with success (`ok`) or not. */
function latestExit(pods: readonly Pod[], container: string, ok: boolean): Ended | undefined {
  let latest: Ended | undefined;
  for (const pod of pods) {
    const status = containerStatusOf(pod, container);
    const terminated = status && latestTermination(status);
    if (!terminated || (terminated.exitCode === 0) !== ok) continue;
    const candidate = { pod, terminated };
    if (!latest || finishedNs(candidate) > finishedNs(latest)) latest = candidate;
  }
  return latest;
}

function newest(pods: readonly Pod[]): Pod | undefined {
  const created = (p: Pod) => unixNanos(p.metadata.creationTimestamp) ?? -1n;
  return pods.reduce<Pod | undefined>((a, p) => (!a || created(p) > created(a) ? p : a), undefined);
}

/** Why a failed Job failed, as read from it and its pods (see failureCause). */
type FailureCause =
  /** Something stopped the pod from outside (eviction, node shutdown): its reason and message. */
  | { kind: 'pod'; reason: string; message?: string | undefined }
  | { kind: 'exit'; terminated: ContainerStateTerminated }
  /** The container never started (its image cannot be pulled, its config refused). */
  | { kind: 'waiting'; reason: string; message?: string | undefined }
  /** The pod was never scheduled: the scheduler's message. */
  | { kind: 'unschedulable'; message: string }
  /** Only the Job's condition is left (`DeadlineExceeded`, `BackoffLimitExceeded`). */
  | { kind: 'job'; reason: string; message?: string | undefined }
  | { kind: 'unknown' };

function unschedulableMessage(pod: Pod | undefined): string | undefined {
  const c = pod?.status?.conditions?.find(
    (x) => x.type === 'PodScheduled' && x.status === 'False' && x.reason === 'Unschedulable',
  );
  return c ? c.message || 'the pod could not be scheduled' : undefined;
}

/**
 * Why a failed Job failed, from the most specific evidence: what stopped the pod from outside (eviction,
 * node shutdown; the container's own exit is then only a consequence), else how the container ended or why
 * it never started or was never scheduled, and only without any of those the Job's condition
 * (`DeadlineExceeded`, `BackoffLimitExceeded` say little of the cause).
 */
function failureCause(job: Job, pods: readonly Pod[], container: string): FailureCause {
  const exit = latestExit(pods, container, false);
  const pod = exit?.pod ?? pods.find((p) => p.status?.phase === 'Failed') ?? newest(pods);
  const podReason = pod?.status?.reason;
  if (podReason) return { kind: 'pod', reason: podReason, message: pod.status?.message };
  if (exit) return { kind: 'exit', terminated: exit.terminated };
  const waiting = pod && containerStatusOf(pod, container)?.state?.waiting;
  if (waiting?.reason && CRASH_WAITING_REASONS.has(waiting.reason)) {
    return { kind: 'waiting', reason: waiting.reason, message: waiting.message };
  }
  const unschedulable = unschedulableMessage(pod);
  if (unschedulable) return { kind: 'unschedulable', message: unschedulable };
  const condition = trueCondition(job, FAILED);
  if (condition?.reason) return { kind: 'job', reason: condition.reason, message: condition.message };
  return { kind: 'unknown' };
}

/** The task's log source as Diego names it, `APP/TASK/<name>`, when the Job carries the name. */
function taskSource(job: Job): string | undefined {
  const name = job.metadata.annotations?.[ANNOTATION_TASK_NAME];
  return name ? `APP/TASK/${name}` : undefined;
}

/** A failed task's `failure_reason`, in Diego's words (see diego-words.ts). */
function taskFailureReason(cause: FailureCause, source: string | undefined): string {
  switch (cause.kind) {
    case 'exit':
      return describeExit(source, cause.terminated);
    case 'pod':
    case 'waiting':
    case 'job':
      return describeCondition(source, cause.reason, cause.message);
    case 'unschedulable':
      return describeCondition(source, 'Unschedulable', placementErrorOf(cause.message));
    case 'unknown':
      return describeCondition(source, 'the Job failed');
  }
}

/** The task's outcome once its Job has finished (see jobFinished), else undefined. */
export function taskOutcome(job: Job, pods: readonly Pod[]): TaskOutcome | undefined {
  const finished = jobFinished(job);
  if (finished === undefined) return undefined;
  if (finished === 'succeeded') return { failed: false, failureReason: '' };
  const cause = failureCause(job, pods, TASK_CONTAINER);
  return { failed: true, failureReason: taskFailureReason(cause, taskSource(job)) };
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** What is wrong with a parsed recipe result, or undefined when CC can take it. */
function resultProblem(r: Record<string, unknown>): string | undefined {
  const type = r['lifecycle_type'];
  if (type !== 'buildpack' && type !== 'docker') return 'lifecycle_type must be "buildpack" or "docker"';
  const metadata = r['lifecycle_metadata'];
  if (!isRecord(metadata)) return 'lifecycle_metadata must be an object';
  if (type === 'buildpack') {
    for (const key of ['buildpack_key', 'detected_buildpack']) {
      if (typeof metadata[key] !== 'string') return `lifecycle_metadata.${key} must be a string`;
    }
  }
  const processTypes = r['process_types'];
  if (!isRecord(processTypes) || !Object.values(processTypes).every((v) => typeof v === 'string')) {
    return 'process_types must be an object of strings';
  }
  if (typeof r['execution_metadata'] !== 'string') return 'execution_metadata must be a string';
  return undefined;
}

/**
 * The recipe's result (the termination message of a successful run; see staging-job.ts for the contract)
 * as CC's `build_completed` result. Anything CC could not take is a failed staging with the reason, rather
 * than a success CC would reject or store broken. Fields beyond the contract's are dropped.
 */
export function parseStagingResult(message: string | undefined): StagingOutcome {
  if (!message?.trim()) return stagingFailed(`the recipe wrote no result to ${TERMINATION_MESSAGE_PATH}`);
  let parsed: unknown;
  try {
    parsed = JSON.parse(message);
  } catch {
    return stagingFailed('the recipe result is not JSON');
  }
  if (!isRecord(parsed)) return stagingFailed('the recipe result is not a JSON object');
  const problem = resultProblem(parsed);
  if (problem) return stagingFailed(`the recipe result is invalid: ${problem}`);
  return {
    failed: false,
    result: {
      lifecycle_type: parsed['lifecycle_type'] as 'buildpack' | 'docker',
      lifecycle_metadata: parsed['lifecycle_metadata'] as Record<string, unknown>,
      process_types: parsed['process_types'] as Record<string, string>,
      execution_metadata: parsed['execution_metadata'] as string,
    },
  };
}

/**
 * A failed staging: the buildpack lifecycle's exit codes as their ids, an unscheduled pod as
 * InsufficientResources or NoCompatibleCell (what Diego's auctioneer says, failure_reason_sanitizer.rb:40-43),
 * and a message that leads with the exit and then the one line of the recipe's output that says what went
 * wrong (see usefulLine).
 */
function stagingFailure(cause: FailureCause): StagingOutcome {
  switch (cause.kind) {
    case 'exit': {
      const { terminated } = cause;
      const line = usefulLine(terminated.message);
      const words = exitWords(terminated);
      return stagingFailed(line ? `${words}: ${line}` : words, stagingErrorIdOf(terminated.exitCode));
    }
    case 'unschedulable': {
      const placement = placementErrorOf(cause.message);
      return placement === cause.message
        ? stagingFailed(`found no compatible cell: ${oneLine(cause.message)}`, 'NoCompatibleCell')
        : stagingFailed(placement.toLowerCase(), 'InsufficientResources');
    }
    case 'pod':
    case 'waiting':
    case 'job':
      return stagingFailed(describeCondition(undefined, cause.reason, cause.message));
    case 'unknown':
      return stagingFailed('the Job failed');
  }
}

/**
 * The staging's outcome once its Job has finished, else undefined. Success needs the pod: the result is its
 * termination message, so a pod deleted before it was read is a failed staging (CC can stage again).
 */
export function stagingOutcome(job: Job, pods: readonly Pod[]): StagingOutcome | undefined {
  const finished = jobFinished(job);
  if (finished === undefined) return undefined;
  if (finished === 'failed') return stagingFailure(failureCause(job, pods, STAGING_CONTAINER));
  const exit = latestExit(pods, STAGING_CONTAINER, true);
  if (!exit) return stagingFailed('the staging pod is gone, and its result with it');
  return parseStagingResult(exit.terminated.message);
}
