/**
 * The BullMQ workers: each job is dispatched by its registered name, its payload checked against the
 * registry's schema, and its failure sorted: permanent (invalid payload, 4xx from Kubernetes) fails at
 * once with the reason kept on the job; anything transient is thrown again for a retry with backoff.
 * A worker killed mid-job loses nothing: the job's lock expires and another worker takes it again.
 */
import { type Job, UnrecoverableError, Worker } from 'bullmq';
import type { Redis } from 'ioredis';
import { KubeApiError } from '@opi/kube';
import { JOBS, type JobKey, type JobPayload, QUEUE_NAMES, jobKeyOf } from '@opi/queue';
import type { HandlerDeps } from './deps.js';
import { convergeLrp } from './handlers/converge-lrp.js';
import { stopInstance } from './handlers/stop-instance.js';
import { syncCluster } from './handlers/sync-cluster.js';
import { reportCrash } from './handlers/crash.js';
import { reportStaging, stage } from './handlers/staging.js';
import { cancelTask, reportTask, runTask } from './handlers/tasks.js';

export interface WorkerOptions {
  connection: Redis;
  prefix: string;
  concurrency: number;
  /** Lock of an active job; a dead worker's jobs stall after it and are taken again. */
  lockMs: number;
  /** How long one sync may hold the sync lock. */
  syncLockTtlMs: number;
}

export interface RunningWorkers {
  workers: Worker[];
  close(timeoutMs: number): Promise<void>;
}

type Handlers = {
  [K in JobKey]: (deps: HandlerDeps, opts: WorkerOptions, payload: JobPayload<K>) => Promise<unknown>;
};

/** Every registered job has its handler here; the compiler refuses a job without one. */
const HANDLERS: Handlers = {
  convergeLrp: (deps, _o, p) => convergeLrp(deps, p.processGuid),
  stopInstance: (deps, _o, p) => stopInstance(deps, p.processGuid, p.podName),
  syncCluster: async (deps, opts) =>
    (await syncCluster(deps, opts.syncLockTtlMs)) ?? 'skipped: another sync is running',
  runTask: (deps, _o, p) => runTask(deps, p.taskGuid),
  cancelTask: (deps, _o, p) => cancelTask(deps, p.taskGuid),
  stage: (deps, _o, p) => stage(deps, p.stagingGuid),
  reportTask: (deps, _o, p) => reportTask(deps, p.taskGuid),
  reportStaging: (deps, _o, p) => reportStaging(deps, p.stagingGuid),
  reportCrash: (deps, _o, p) => reportCrash(deps, p),
};

async function run(key: JobKey, deps: HandlerDeps, opts: WorkerOptions, data: unknown): Promise<unknown> {
  const parsed = JOBS[key].schema.safeParse(data);
  if (!parsed.success) throw new UnrecoverableError(`invalid payload: ${parsed.error.message}`);
  // The table is typed per job, and the payload was just checked against that job's own schema.
  const handler = HANDLERS[key] as (d: HandlerDeps, o: WorkerOptions, p: unknown) => Promise<unknown>;
  return handler(deps, opts, parsed.data);
}

async function dispatch(deps: HandlerDeps, opts: WorkerOptions, job: Job): Promise<unknown> {
  const key = jobKeyOf(job.name);
  if (!key) throw new UnrecoverableError(`unknown job name ${job.name}`);
  try {
    return await run(key, deps, opts, job.data);
  } catch (err) {
    if (err instanceof KubeApiError && !err.transient) {
      throw new UnrecoverableError(`kubernetes refused: ${err.status} ${err.reason}: ${err.message}`);
    }
    throw err;
  }
}

export function startWorkers(deps: HandlerDeps, opts: WorkerOptions): RunningWorkers {
  const common = {
    connection: opts.connection,
    prefix: opts.prefix,
    // A job may stall once on a worker restart (rollout) without being failed.
    maxStalledCount: 2,
    lockDuration: opts.lockMs,
    stalledInterval: opts.lockMs,
  };
  const lrp = new Worker(QUEUE_NAMES.lrp, (job) => dispatch(deps, opts, job), {
    ...common,
    concurrency: opts.concurrency,
  });
  const sync = new Worker(QUEUE_NAMES.sync, (job) => dispatch(deps, opts, job), {
    ...common,
    concurrency: 1,
  });
  const task = new Worker(QUEUE_NAMES.task, (job) => dispatch(deps, opts, job), {
    ...common,
    concurrency: opts.concurrency,
  });
  const callback = new Worker(QUEUE_NAMES.callback, (job) => dispatch(deps, opts, job), {
    ...common,
    concurrency: opts.concurrency,
  });
  const workers = [lrp, sync, task, callback];
  for (const w of workers) {
    w.on('failed', (job, err) => {
      deps.logger.warn(
        { jobId: job?.id, job: job?.name, attemptsMade: job?.attemptsMade, err: err.message },
        'job failed',
      );
    });
    w.on('completed', (job, result) => {
      deps.logger.debug({ jobId: job.id, job: job.name, result }, 'job done');
    });
    w.on('error', (err) => {
      deps.logger.error({ err }, 'worker error');
    });
  }
  return {
    workers,
    close: async (timeoutMs) => {
      // Finish active jobs within the grace period; past it, leave them to stall and be taken again.
      const graceful = Promise.all(workers.map((w) => w.close()));
      const timer = new Promise<'timeout'>((resolve) => {
        setTimeout(() => {
          resolve('timeout');
        }, timeoutMs).unref();
      });
      if ((await Promise.race([graceful, timer])) === 'timeout')
        await Promise.all(workers.map((w) => w.close(true)));
    },
  };
}
