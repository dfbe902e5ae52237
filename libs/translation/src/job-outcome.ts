/**
 * How a task's or a staging's Job ended, as CC is told: read from the Job and its pods only, so any worker
 * (or the same one after a restart) reaches the same outcome.
 */
import type { StagingOutcome, TaskOutcome } from '@opi/domain';
import { containerStatusOf, latestTermination } from './container-status.js';
import { CRASH_WAITING_REASONS } from './instances.js';
import type { ContainerStateTerminated, Job, JobCondition, Pod } from './k8s-objects.js';
import { STAGING_CONTAINER, TERMINATION_MESSAGE_PATH } from './staging-job.js';
import { TASK_CONTAINER } from './task-job.js';
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

function joined(...parts: (string | undefined)[]): string {
  return parts
    .map((p) => p?.trim())
    .filter(Boolean)
    .join(': ');
}

interface FailureCause {
  /** A Kubernetes reason, the task's `failure_reason`: `OOMKilled`, `Error`, `Evicted`, `DeadlineExceeded`, … */
  reason: string;
  /** Everything known, for staging's message: reason, exit code, the termination message. */
  detail: string;
}

/**
 * Why a failed Job failed, from the most specific evidence: what stopped the pod from outside (eviction,
 * node shutdown; the container's own exit is then only a consequence), else how the container ended or why
 * it never started, and only without a pod the Job's condition (`DeadlineExceeded`, `BackoffLimitExceeded`
 * say little of the cause).
 */
function failureCause(job: Job, pods: readonly Pod[], container: string): FailureCause {
  const exit = latestExit(pods, container, false);
  const pod = exit?.pod ?? pods.find((p) => p.status?.phase === 'Failed') ?? newest(pods);
  const podReason = pod?.status?.reason;
  if (podReason) return { reason: podReason, detail: joined(podReason, pod.status?.message) };
  if (exit) {
    const { reason, exitCode, message } = exit.terminated;
    // `Error` only says the exit code was not 0, which the detail says anyway.
    const shown = reason === 'Error' ? undefined : reason;
    return { reason: reason || 'Error', detail: joined(shown, `exit code ${exitCode}`, message) };
  }
  const waiting = pod && containerStatusOf(pod, container)?.state?.waiting;
  if (waiting?.reason && CRASH_WAITING_REASONS.has(waiting.reason)) {
    return { reason: waiting.reason, detail: joined(waiting.reason, waiting.message) };
  }
  const condition = trueCondition(job, FAILED);
  if (condition?.reason)
    return { reason: condition.reason, detail: joined(condition.reason, condition.message) };
  return { reason: 'Error', detail: 'the Job failed' };
}

/** The task's outcome once its Job has finished (see jobFinished), else undefined. */
export function taskOutcome(job: Job, pods: readonly Pod[]): TaskOutcome | undefined {
  const finished = jobFinished(job);
  if (finished === undefined) return undefined;
  if (finished === 'succeeded') return { failed: false, failureReason: '' };
  return { failed: true, failureReason: failureCause(job, pods, TASK_CONTAINER).reason };
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function stagingFailed(message: string): StagingOutcome {
  return { failed: true, message: `staging failed: ${message}` };
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
 * The staging's outcome once its Job has finished, else undefined. Success needs the pod: the result is its
 * termination message, so a pod deleted before it was read is a failed staging (CC can stage again).
 */
export function stagingOutcome(job: Job, pods: readonly Pod[]): StagingOutcome | undefined {
  const finished = jobFinished(job);
  if (finished === undefined) return undefined;
  if (finished === 'failed') return stagingFailed(failureCause(job, pods, STAGING_CONTAINER).detail);
  const exit = latestExit(pods, STAGING_CONTAINER, true);
  if (!exit) return stagingFailed('the staging pod is gone, and its result with it');
  return parseStagingResult(exit.terminated.message);
}
