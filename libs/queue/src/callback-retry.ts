/**
 * How a report to CC is retried: delays growing exponentially from the first one, with jitter, each
 * capped, for as long as the report's retry window lasts, counted from when it was first enqueued (the
 * job's timestamp). The cap bounds how long a report waits after CC comes back; the window, not a count
 * of tries, bounds how long CC may be away. The delays are the callback worker's BullMQ backoff strategy
 * (decision 8).
 */
import { type BackoffStrategy, type MinimalJob, UnrecoverableError } from 'bullmq';

export interface CallbackRetryPolicy {
  /** The first delay; each next one doubles, up to maxDelayMs. */
  firstDelayMs: number;
  maxDelayMs: number;
  /** From when the report was first enqueued; an attempt failing after it fails the report for good. */
  windowMs: number;
}

/** The backoff type of report jobs, resolved by callbackBackoffStrategy in the callback worker. */
export const CALLBACK_BACKOFF = 'callback-window';

/** Tries are bounded by the window, not counted: BullMQ's attempts only needs to never run out. */
export const CALLBACK_ATTEMPTS = Number.MAX_SAFE_INTEGER;

/** Each delay is drawn from [d/2, d], so a backlog of reports does not retry in lockstep. */
const JITTER = 0.5;

/**
 * The delay before the attempt after `attemptsMade` failed ones: min(first · 2^(n-1), max), jittered, and
 * never past the window's end, so the last attempt falls on it; -1 (BullMQ: no more retries) once the
 * window has passed.
 */
export function callbackRetryDelay(
  policy: CallbackRetryPolicy,
  attemptsMade: number,
  enqueuedAt: number,
  now: number,
  random: () => number = Math.random,
): number {
  const end = enqueuedAt + policy.windowMs;
  if (now >= end) return -1;
  const capped = Math.min(policy.firstDelayMs * 2 ** Math.max(0, attemptsMade - 1), policy.maxDelayMs);
  return Math.min(Math.floor(capped * (1 - JITTER * random())), end - now);
}

/** Whether a report first enqueued at `enqueuedAt` is past its window at `now`. */
export function retryWindowPassed(policy: CallbackRetryPolicy, enqueuedAt: number, now: number): boolean {
  return now >= enqueuedAt + policy.windowMs;
}

/** The Worker's `settings.backoffStrategy` for report jobs (backoff type CALLBACK_BACKOFF). */
export function callbackBackoffStrategy(policy: CallbackRetryPolicy): BackoffStrategy {
  return (attemptsMade: number, type?: string, _err?: Error, job?: MinimalJob) =>
    type === CALLBACK_BACKOFF && job
      ? callbackRetryDelay(policy, attemptsMade, job.timestamp, Date.now())
      : -1;
}

/** A report's attempt failed after its window had passed: it fails for good, the last error kept. */
export class RetryWindowPassedError extends UnrecoverableError {
  constructor(policy: CallbackRetryPolicy, enqueuedAt: number, cause: string) {
    super(
      `not delivered within its retry window (${formatMs(policy.windowMs)} from ${new Date(enqueuedAt).toISOString()}); last error: ${cause}`,
    );
  }
}

/** 86400000 → "24 h", 1800000 → "30 min", 1500 → "1500 ms". */
export function formatMs(ms: number): string {
  if (ms >= 3_600_000 && ms % 3_600_000 === 0) return `${ms / 3_600_000} h`;
  if (ms >= 60_000 && ms % 60_000 === 0) return `${ms / 60_000} min`;
  if (ms >= 1000 && ms % 1000 === 0) return `${ms / 1000} s`;
  return `${ms} ms`;
}
