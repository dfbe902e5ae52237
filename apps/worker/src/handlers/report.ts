/**
 * Posting to CC from a job: delivered → done; refused (4xx) → done, logged (CC will never take it:
 * e.g. 400 for a task it already failed); unavailable → thrown, so the queue retries with backoff; a
 * callback URL that cannot work → a permanent failure. A task's or staging's completion is posted through
 * reportOnce, which remembers the delivery so that no later run posts it again.
 */
import { UnrecoverableError } from 'bullmq';
import { CallbackUrlError } from '@opi/callbacks';
import { ANNOTATION_REPORTED_AT, reportedAt } from '@opi/translation';
import type { Job } from '@opi/kube-objects';
import type { HandlerDeps } from '../deps.js';
import { type Delivered, type JobResult, type Refused, type Skipped, resultOf } from './outcome.js';

/** Where a report is remembered besides its record: the Job it came from. */
export interface JobRef {
  namespace: string;
  name: string;
}

export async function markJobReported(deps: HandlerDeps, job: JobRef): Promise<void> {
  await deps.kube.jobs.annotate(job.namespace, job.name, {
    [ANNOTATION_REPORTED_AT]: new Date().toISOString(),
  });
}

export async function postToCc(
  deps: HandlerDeps,
  url: string,
  body: unknown,
  what: Record<string, unknown>,
): Promise<Delivered | Refused> {
  try {
    const result = await deps.callbacks.postJson(url, body);
    if (result.kind === 'rejected') {
      deps.logger.warn(
        { ...what, status: result.status, answer: result.body },
        'CC refused the report; not retrying',
      );
      return { kind: 'refused', status: result.status };
    }
    return { kind: 'delivered', status: result.status };
  } catch (err) {
    if (err instanceof CallbackUrlError) throw new UnrecoverableError(err.message);
    throw err;
  }
}

/**
 * Runs a call to Redis or the cluster again in place, with a short backoff, rather than failing the job.
 * After CC took a report, nothing may post it again: a failed write of "reported" would fail the job, and
 * its retry would post a second time. So those writes are retried here, through a cluster answering 5xx
 * or a Redis restart, before the job gives up (only then, or if the worker dies in between, can CC get
 * the report twice; it answers a repeated completion with 400). Before the post, the Job's read is
 * retried here too, a few times: a job's attempts are for CC's outages, and a cluster's blip that used
 * one up would push the next post minutes later (the job's backoff doubles per attempt).
 */
export async function retryInPlace<T>(
  deps: HandlerDeps,
  what: string,
  call: () => Promise<T>,
  tries = 20,
): Promise<T> {
  for (let i = 1; ; i++) {
    try {
      return await call();
    } catch (err) {
      if (i >= tries) throw err;
      deps.logger.warn(
        { err: err instanceof Error ? err.message : String(err), try: i },
        `${what}: retrying`,
      );
      await new Promise((r) => setTimeout(r, Math.min(100 * 2 ** i, 5000)));
    }
  }
}

/** Tries of the Job's read before a post: about 3 s in all. */
const READ_TRIES = 5;

/**
 * Posts a completion unless it is known to be delivered, and remembers the delivery in two places at
 * once: the record in Redis and, when there is one, an annotation on the Job. Either stops a later run
 * from posting again, so a worker killed after CC's answer while one of the two cannot be written (Redis
 * restarting, the cluster failing) still leaves the other behind. The chaos suite found that window: three
 * completions posted again after a worker died waiting for a restarting Redis.
 */
export async function reportOnce(
  deps: HandlerDeps,
  report: {
    /** "task" or "staging", for the log lines. */
    kind: string;
    job: JobRef | undefined;
    post: () => Promise<Delivered | Refused>;
    markRecord: () => Promise<void>;
  },
): Promise<Skipped | Delivered | Refused> {
  const { kind, job } = report;
  const markRecord = () => retryInPlace(deps, `marking the ${kind} reported`, report.markRecord);
  if (job && marked(await readJob(deps, kind, job))) {
    await markRecord();
    return { kind: 'skipped', why: 'already reported (its Job says so)' };
  }
  const result = await report.post();
  const marks = [markRecord()];
  if (job) marks.push(markJob(deps, kind, job));
  // Both run to their end: one failing must not cut the other's retries short.
  const failed = (await Promise.allSettled(marks)).find((r) => r.status === 'rejected');
  if (failed) throw failed.reason;
  return result;
}

/**
 * A report found already told by its record: its Job gets the mark too if it lacks it. A worker killed
 * after marking the record but before marking the Job leaves that gap, and a Redis flush inside it would
 * make the Job look unreported; the job's retry after the kill closes it here instead of waiting for the
 * sync.
 */
/**
 * A finished run's report, from its record: skipped until the record has an outcome; once the record says
 * reported, only the Job's mark is made sure of; else reported once (reportOnce) and logged.
 */
export async function reportCompletion<O>(
  deps: HandlerDeps,
  report: {
    kind: string;
    job: JobRef | undefined;
    record: { reported: boolean; outcome?: O | undefined };
    post: (outcome: O) => Promise<Delivered | Refused>;
    markRecord: () => Promise<void>;
    logged: (outcome: O, result: JobResult) => void;
  },
): Promise<Skipped | Delivered | Refused> {
  const { kind, job, record } = report;
  if (record.reported) return alreadyReported(deps, kind, job);
  const { outcome } = record;
  if (outcome === undefined) return { kind: 'skipped', why: 'not finished' };
  const result = await reportOnce(deps, {
    kind,
    job,
    post: () => report.post(outcome),
    markRecord: report.markRecord,
  });
  report.logged(outcome, resultOf(result));
  return result;
}

export async function alreadyReported(
  deps: HandlerDeps,
  kind: string,
  job: JobRef | undefined,
): Promise<Skipped> {
  if (!job) return { kind: 'skipped', why: 'already reported' };
  const current = await readJob(deps, kind, job);
  if (!current || marked(current)) return { kind: 'skipped', why: 'already reported' };
  await markJob(deps, kind, job);
  return { kind: 'skipped', why: 'already reported (its Job marked now)' };
}

/** The report's Job as it is now, read again in place through a cluster's blips (READ_TRIES). */
function readJob(deps: HandlerDeps, kind: string, job: JobRef): Promise<Job | undefined> {
  return retryInPlace(
    deps,
    `reading the ${kind}'s Job`,
    () => deps.kube.jobs.get(job.namespace, job.name),
    READ_TRIES,
  );
}

/** Marks the Job reported, retried in place: CC already has the report. */
function markJob(deps: HandlerDeps, kind: string, job: JobRef): Promise<void> {
  return retryInPlace(deps, `marking the ${kind} Job reported`, () => markJobReported(deps, job));
}

function marked(job: Job | undefined): boolean {
  return reportedAt(job) !== undefined;
}
