/**
 * The BullMQ workers: each job is dispatched by its registered name, its payload checked against the
 * registry's schema, and its failure sorted: permanent (invalid payload, 4xx from Kubernetes) fails at
 * once with the reason kept on the job; anything transient is thrown again for a retry with backoff.
 * A worker killed mid-job loses nothing: the job's lock expires and another worker takes it again.
 */
import { type Job, UnrecoverableError, Worker } from 'bullmq';
import { KubeApiError } from '@opi/kube';
import type { CallbackKind, OpiMetrics } from '@opi/metrics';
import {
  type CallbackRetryPolicy,
  JOBS,
  type JobKey,
  type JobPayload,
  QUEUE_NAMES,
  type RedisClient,
  RetryWindowPassedError,
  callbackBackoffStrategy,
  jobKeyOf,
  retryWindowPassed,
} from '@opi/queue';
import type { HandlerDeps } from './deps.js';
import type { NamespaceAlarm } from './namespace-alarm.js';
import { convergeLrp } from './handlers/converge-lrp.js';
import { settleRollout } from './handlers/settle-rollout.js';
import { stopInstance } from './handlers/stop-instance.js';
import { syncCluster } from './handlers/sync-cluster.js';
import { reportCrash } from './handlers/crash.js';
import { reportStaging, stage } from './handlers/staging.js';
import { cancelTask, reportTask, runTask } from './handlers/tasks.js';
import { type JobResult, type Outcome, resultOf } from './handlers/outcome.js';
import { DesireRefused } from './handlers/refusal.js';
import { REFUSAL_KINDS, type RefusalKind, refusalKind, refusalMessage } from '@opi/translation';

export interface WorkerOptions {
  connection: RedisClient;
  prefix: string;
  concurrency: number;
  /**
   * Lock of an active job; a dead worker's jobs stall after it and are taken again. The sync's lock lives
   * as long: its holder extends it while it runs, so a worker that dies mid-sync holds the next back no
   * longer than this.
   */
  lockMs: number;
  /** How reports to CC are retried: capped delays within a window (callback-retry.ts). */
  callbackRetry: CallbackRetryPolicy;
  /** Where job outcomes are counted; omitted: nowhere. */
  metrics?: OpiMetrics;
  /** Says a missing namespace once; failures it recognises are then logged at debug. */
  namespaceAlarm?: NamespaceAlarm;
}

export interface RunningWorkers {
  workers: Worker[];
  close(timeoutMs: number): Promise<void>;
}

/** When a job was due: added, plus its delay (a scheduled job's is the wait until its turn). */
interface JobTiming {
  dueAt: number;
}

type Handlers = {
  [K in JobKey]: (
    deps: HandlerDeps,
    opts: WorkerOptions,
    payload: JobPayload<K>,
    job: JobTiming,
  ) => Promise<Outcome>;
};

/** Every registered job has its handler here; the compiler refuses a job without one. */
const HANDLERS: Handlers = {
  convergeLrp: async (deps, _o, p) => {
    const outcome = await convergeLrp(deps, p.processGuid, {
      fresh: p.fresh === true,
      repair: p.repair === true,
    });
    // The cluster took this generation: a refusal of it or an older one no longer stands.
    if (outcome.kind === 'converged') await deps.store.clearRefusal(p.processGuid, outcome.generation);
    return outcome;
  },
  stopInstance: (deps, _o, p) => stopInstance(deps, p.processGuid, p.podName, p.index),
  settleRollout: (deps, _o, p) => settleRollout(deps, p),
  syncCluster: (deps, opts, _p, job) => {
    // Only the cache writer consumes the sync queue (startSyncWorker); this guards a miswiring.
    if (!deps.cluster) throw new Error('the sync runs only where the cluster is watched');
    return syncCluster(deps, deps.cluster, opts.lockMs, job.dueAt);
  },
  runTask: (deps, _o, p) => runTask(deps, p.taskGuid),
  cancelTask: (deps, _o, p) => cancelTask(deps, p.taskGuid),
  stage: (deps, _o, p) => stage(deps, p.stagingGuid),
  reportTask: (deps, _o, p) => reportTask(deps, p.taskGuid),
  reportStaging: (deps, _o, p) => reportStaging(deps, p.stagingGuid),
  reportCrash: (deps, _o, p) => reportCrash(deps, p),
};

const CALLBACK_KINDS: Record<string, CallbackKind> = {
  [JOBS.reportTask.name]: 'task',
  [JOBS.reportStaging.name]: 'staging',
  [JOBS.reportCrash.name]: 'crash',
};

/** Time of the attempt that just ended: BullMQ stamps its start (processedOn) and, when done, its end. */
function attemptMs(job: Job): number {
  return (job.finishedOn ?? Date.now()) - (job.processedOn ?? Date.now());
}

/**
 * What an outcome counts besides the job itself: a report CC refused (completed, so never retried) and a
 * sync's duration. Metrics are counted here and from the Worker's events, so the handlers stay free of them.
 */
function observeOutcome(metrics: OpiMetrics, job: Job, outcome: Outcome): void {
  switch (outcome.kind) {
    case 'refused': {
      const kind = CALLBACK_KINDS[job.name];
      if (kind) metrics.observeCallbackFailure(kind, 'refused');
      return;
    }
    case 'synced':
      metrics.observeSync(outcome.report.durationMs);
      return;
    case 'no-record':
    case 'skipped':
    case 'converged':
    case 'stopped':
    case 'instance-stopped':
    case 'rollout-checked':
    case 'job-created':
    case 'job-deleted':
    case 'staged':
    case 'staging-failed':
    case 'delivered':
      return;
  }
}

function observeFailed(metrics: OpiMetrics, queue: string, job: Job, err: Error): void {
  // 'failed' comes for every failed attempt; only one that will not be retried is stamped finished.
  const final =
    job.finishedOn !== undefined ||
    err instanceof UnrecoverableError ||
    job.attemptsMade >= (job.opts.attempts ?? 1);
  metrics.observeJob(queue, job.name, final ? 'failed' : 'retried', attemptMs(job), job.attemptsMade);
  const kind = CALLBACK_KINDS[job.name];
  if (final && kind)
    metrics.observeCallbackFailure(kind, err instanceof RetryWindowPassedError ? 'window_passed' : 'gave_up');
}

async function run(key: JobKey, deps: HandlerDeps, opts: WorkerOptions, job: Job): Promise<Outcome> {
  const parsed = JOBS[key].schema.safeParse(job.data);
  if (!parsed.success) throw new UnrecoverableError(`invalid payload: ${parsed.error.message}`);
  // The table is typed per job, and the payload was just checked against that job's own schema.
  const handler = HANDLERS[key] as (
    d: HandlerDeps,
    o: WorkerOptions,
    p: unknown,
    j: JobTiming,
  ) => Promise<Outcome>;
  return handler(deps, opts, parsed.data, { dueAt: job.timestamp + job.delay });
}

/**
 * A permanent failure from Kubernetes. Its job's line is debug when the cause was already logged once (a
 * missing namespace), and names the refusal's kind when a desire was refused.
 */
class KubeRefused extends UnrecoverableError {
  constructor(
    err: KubeApiError,
    readonly alreadySaid: boolean,
    readonly refusal?: RefusalKind,
  ) {
    super(`kubernetes refused: ${err.status} ${err.reason}: ${err.message}`);
  }
}

/**
 * Stores the refusal where /instances shows it (stamped with the generation refused) and counts it; the
 * job then fails for good. The sync converges the LRP again every OPI_RESYNC_INTERVAL_MS, so a refusal that
 * clears by itself (quota freed, the namespace made) clears there. A Redis failure here is thrown as it
 * is: the job is retried and the converge refused again.
 */
async function refused(deps: HandlerDeps, opts: WorkerOptions, e: DesireRefused): Promise<KubeRefused> {
  const cause = e.refusal;
  const reason = refusalKind(cause);
  await deps.store.recordRefusal(e.processGuid, {
    generation: e.generation,
    reason,
    message: refusalMessage(cause),
  });
  opts.metrics?.observeDesireRefused(reason);
  return new KubeRefused(cause, opts.namespaceAlarm?.noticed(cause) === true, reason);
}

/** Runs the job's handler; its outcome is counted here and returned as the job's result (resultOf). */
async function dispatch(deps: HandlerDeps, opts: WorkerOptions, job: Job): Promise<JobResult> {
  const key = jobKeyOf(job.name);
  if (!key) throw new UnrecoverableError(`unknown job name ${job.name}`);
  try {
    const outcome = await run(key, deps, opts, job);
    if (opts.metrics) observeOutcome(opts.metrics, job, outcome);
    return resultOf(outcome);
  } catch (err) {
    if (err instanceof DesireRefused) throw await refused(deps, opts, err);
    if (err instanceof KubeApiError && !err.transient) {
      throw new KubeRefused(err, opts.namespaceAlarm?.noticed(err) === true);
    }
    throw err;
  }
}

/** The ids a job is about (never secrets: payloads hold identities only). */
function identity(job: Job | undefined): Record<string, unknown> {
  if (!job) return {};
  const data = (job.data ?? {}) as Record<string, unknown>;
  const ids: Record<string, unknown> = { jobId: job.id, job: job.name };
  for (const k of ['processGuid', 'taskGuid', 'stagingGuid', 'instance', 'index', 'crashCount']) {
    if (data[k] !== undefined) ids[k] = data[k];
  }
  return ids;
}

function durationOf(job: Job): number | undefined {
  return job.finishedOn !== undefined && job.processedOn !== undefined
    ? job.finishedOn - job.processedOn
    : undefined;
}

const COMMON = (opts: WorkerOptions) => ({
  connection: opts.connection,
  prefix: opts.prefix,
  // A job may stall once on a worker restart (rollout) without being failed.
  maxStalledCount: 2,
  lockDuration: opts.lockMs,
  stalledInterval: opts.lockMs,
});

/**
 * A report's attempt that failed after its retry window had passed fails for good, with the window and
 * the last error as the job's reason (the backoff strategy schedules no attempt past the window's end,
 * so this is the one that falls on it, or one a stopped worker held back past it).
 */
async function dispatchReport(deps: HandlerDeps, opts: WorkerOptions, job: Job): Promise<JobResult> {
  try {
    return await dispatch(deps, opts, job);
  } catch (err) {
    if (
      err instanceof UnrecoverableError ||
      !retryWindowPassed(opts.callbackRetry, job.timestamp, Date.now())
    )
      throw err;
    await giveUpTaskReport(deps, job);
    throw new RetryWindowPassedError(
      opts.callbackRetry,
      job.timestamp,
      err instanceof Error ? err.message : String(err),
    );
  }
}

/**
 * A task whose completion CC never took leaves `GET /tasks`: CC's task sync then fails it ("Unable to
 * determine completion status"), as it does a task Diego lost, instead of showing it running for ever.
 */
async function giveUpTaskReport(deps: HandlerDeps, job: Job): Promise<void> {
  if (job.name !== JOBS.reportTask.name) return;
  const payload = JOBS.reportTask.schema.safeParse(job.data);
  if (!payload.success) return;
  try {
    await deps.tasks.markTaskReported(payload.data.taskGuid);
  } catch (err) {
    deps.logger.warn(
      { taskGuid: payload.data.taskGuid, err: err instanceof Error ? err.message : String(err) },
      'could not take an undelivered task off GET /tasks; the sync reports it again',
    );
  }
}

/** One BullMQ worker on `queue`, its jobs dispatched, logged and counted. */
function queueWorker(queue: string, deps: HandlerDeps, opts: WorkerOptions, concurrency: number): Worker {
  const reports = queue === QUEUE_NAMES.callback;
  const w = new Worker(queue, (job) => (reports ? dispatchReport : dispatch)(deps, opts, job), {
    ...COMMON(opts),
    concurrency,
    // Reports back off by their own strategy: capped delays for as long as their window lasts.
    ...(reports && { settings: { backoffStrategy: callbackBackoffStrategy(opts.callbackRetry) } }),
  });
  w.on('failed', (job, err) => {
    const line = {
      ...identity(job),
      attemptsMade: job?.attemptsMade,
      err: err.message,
      ...(err instanceof KubeRefused && err.refusal ? { refused: err.refusal } : {}),
    };
    if (err instanceof KubeRefused && err.alreadySaid) deps.logger.debug(line, 'job failed');
    else if (err instanceof RetryWindowPassedError) deps.logger.error(line, 'report failed for good');
    // A report retries every OPI_CALLBACK_MAX_DELAY_MS through an outage of CC: its first failure is
    // said, the thousands after it only at debug (opi_callbacks_pending counts them).
    else if (reports && (job?.attemptsMade ?? 0) > 1 && !(err instanceof UnrecoverableError))
      deps.logger.debug(line, 'job failed');
    else deps.logger.warn(line, 'job failed');
    if (job && opts.metrics) observeFailed(opts.metrics, w.name, job, err);
  });
  w.on('completed', (job, result) => {
    // One line per job, with what it was about, so an app can be followed from the API to here.
    const line = {
      ...identity(job),
      attemptsMade: job.attemptsMade,
      durationMs: durationOf(job),
      result: result as unknown,
    };
    if (job.name === JOBS.syncCluster.name) deps.logger.debug(line, 'job done');
    else deps.logger.info(line, 'job done');
    opts.metrics?.observeJob(w.name, job.name, 'completed', attemptMs(job), job.attemptsMade);
  });
  w.on('error', (err) => {
    deps.logger.error({ err }, 'worker error');
  });
  return w;
}

/** Closes workers within the grace period; past it, leaves their jobs to stall and be taken again. */
export async function closeWorkers(workers: readonly Worker[], timeoutMs: number): Promise<void> {
  const graceful = Promise.all(workers.map((w) => w.close()));
  const timer = new Promise<'timeout'>((resolve) => {
    setTimeout(() => {
      resolve('timeout');
    }, timeoutMs).unref();
  });
  if ((await Promise.race([graceful, timer])) === 'timeout')
    await Promise.all(workers.map((w) => w.close(true)));
}

/** The lrp, task and callback queues' workers; the sync's runs only in the cache writer (startSyncWorker). */
export function startWorkers(deps: HandlerDeps, opts: WorkerOptions): RunningWorkers {
  // Every reason's series exists from the start, so rate() and alerts see a 0 before the first refusal.
  for (const reason of REFUSAL_KINDS) opts.metrics?.observeDesireRefused(reason, 0);
  const workers = [
    queueWorker(QUEUE_NAMES.lrp, deps, opts, opts.concurrency),
    queueWorker(QUEUE_NAMES.task, deps, opts, opts.concurrency),
    queueWorker(QUEUE_NAMES.callback, deps, opts, opts.concurrency),
  ];
  return { workers, close: (timeoutMs) => closeWorkers(workers, timeoutMs) };
}

/** The sync queue's worker, for the process that watches the cluster (`deps.cluster`), one job at a time. */
export function startSyncWorker(deps: HandlerDeps, opts: WorkerOptions): Worker {
  return queueWorker(QUEUE_NAMES.sync, deps, opts, 1);
}
