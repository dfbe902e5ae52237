/**
 * What the API uses to enqueue: one place that knows each job's options (attempts, backoff with jitter,
 * retention, de-duplication), so a job is always added the same way.
 */
import { type DefaultJobOptions, Queue, type JobsOptions } from 'bullmq';
import type { Settings } from '@opi/config';
import { type RedisClient, mapRejections, queueError } from './connection.js';
import { CALLBACK_ATTEMPTS, CALLBACK_BACKOFF } from './callback-retry.js';
import { JOBS, QUEUE_NAMES, type JobPayload, type QueueName, jobId } from './jobs.js';

export interface ProducerOptions {
  connection: RedisClient;
  prefix: string;
  attempts: number;
}

/** Kept finished jobs: enough to see what happened, bounded so Redis does not grow forever. */
export const RETENTION = {
  removeOnComplete: { age: 3600, count: 1000 },
  removeOnFail: { age: 7 * 24 * 3600, count: 10_000 },
} as const;

/** What every job of the service's queues gets unless it says otherwise. */
export function defaultJobOptions(attempts: number): DefaultJobOptions {
  return {
    attempts,
    // 1 s, 2 s, 4 s, … with jitter so a burst of failures does not retry in lockstep.
    backoff: { type: 'exponential', delay: 1000, jitter: 0.5 },
    ...RETENTION,
  };
}

/**
 * A report's options: retried until its window passes (the callback worker's backoff strategy, see
 * callback-retry.ts), keeping only the last few errors' stacks (BullMQ keeps one per attempt otherwise,
 * thousands over a day-long window).
 */
export const CALLBACK_JOB_OPTIONS = {
  attempts: CALLBACK_ATTEMPTS,
  backoff: { type: CALLBACK_BACKOFF },
  stackTraceLimit: 3,
} as const satisfies JobsOptions;

/**
 * A converge job's own options. De-duplicated per process guid with keepLastIfActive: at most one job per
 * LRP runs at a time (so a desire and a stop can never race each other in two workers) and one more
 * waits, which re-reads the latest desired state when it runs. The id is deterministic per cause (a
 * request's generation, a sync run): adding the same cause twice is one job.
 */
export function convergeJobOptions(processGuid: string, cause: string): JobsOptions {
  return {
    jobId: jobId('converge', processGuid, cause),
    deduplication: { id: `converge-${processGuid}`, keepLastIfActive: true },
  };
}

/** A converge to add: its payload and its cause (see convergeJobOptions). */
export type ConvergeItem = JobPayload<'convergeLrp'> & { cause: string };

function convergeJob({ cause, ...payload }: ConvergeItem): {
  name: string;
  data: unknown;
  opts: JobsOptions;
} {
  const spec = JOBS.convergeLrp;
  return {
    name: spec.name,
    data: spec.schema.parse(payload),
    opts: convergeJobOptions(payload.processGuid, cause),
  };
}

/**
 * Removes a completed job of this id, so that the add after it is not dropped: BullMQ keeps a finished
 * job's id for RETENTION and ignores an add of the same id. A report that ran before its record existed
 * (Redis flushed under it: "no record") would otherwise hold off the real report for an hour. A failed
 * job is left alone: it spent its tries or can never work, and operators see it on the dashboard, where
 * they can retry it.
 */
async function removeCompleted(queue: Queue, id: string): Promise<void> {
  if ((await queue.getJobState(id)) === 'completed') await queue.remove(id);
}

export class JobProducer {
  readonly queues: Record<QueueName, Queue>;

  /** The producer every process makes: the service's prefix and the settings' tries. */
  static fromSettings(connection: RedisClient, settings: Settings): JobProducer {
    return new JobProducer({
      connection,
      prefix: settings.queuePrefix,
      attempts: settings.worker.attempts,
    });
  }

  constructor(options: ProducerOptions) {
    // A call that cannot reach Redis rejects with QueueUnavailableError (the API answers 503).
    const openQueue = (name: QueueName): Queue =>
      mapRejections(
        new Queue(name, {
          connection: options.connection,
          prefix: options.prefix,
          defaultJobOptions: defaultJobOptions(options.attempts),
        }),
        queueError,
      );
    this.queues = {
      [QUEUE_NAMES.lrp]: openQueue(QUEUE_NAMES.lrp),
      [QUEUE_NAMES.sync]: openQueue(QUEUE_NAMES.sync),
      [QUEUE_NAMES.task]: openQueue(QUEUE_NAMES.task),
      [QUEUE_NAMES.callback]: openQueue(QUEUE_NAMES.callback),
    };
  }

  /**
   * A run-once job or a report, by its deterministic id; `again` replaces a completed one of that id (a
   * rerun, a report due again). Reports to CC get the callback queue's attempts and back-off.
   */
  private async add<
    K extends 'runTask' | 'cancelTask' | 'stage' | 'reportTask' | 'reportStaging' | 'reportCrash',
  >(key: K, payload: JobPayload<K>, id: string, due: 'again' | 'once'): Promise<void> {
    const spec = JOBS[key];
    const queue = this.queues[spec.queue];
    if (due === 'again') await removeCompleted(queue, id);
    const options = spec.queue === QUEUE_NAMES.callback ? CALLBACK_JOB_OPTIONS : {};
    await queue.add(spec.name, spec.schema.parse(payload), { jobId: id, ...options });
  }

  /**
   * One job per task guid: posting a task twice runs it once. Callers add it when the record says the
   * run is due (new, or recorded without a Job), so a finished run of the same id is stale (see
   * removeCompleted).
   */
  runTask(taskGuid: string): Promise<void> {
    return this.add('runTask', { taskGuid }, jobId('run-task', taskGuid), 'again');
  }

  cancelTask(taskGuid: string): Promise<void> {
    return this.add('cancelTask', { taskGuid }, jobId('cancel-task', taskGuid), 'once');
  }

  stage(stagingGuid: string): Promise<void> {
    return this.add('stage', { stagingGuid }, jobId('stage', stagingGuid), 'again');
  }

  /**
   * One report job per task: enqueued again by every sync until CC has it, it is still one job. Callers
   * add it when the record has an outcome and is not reported, so a finished one is stale.
   */
  reportTask(taskGuid: string): Promise<void> {
    return this.add('reportTask', { taskGuid }, jobId('report-task', taskGuid), 'again');
  }

  reportStaging(stagingGuid: string): Promise<void> {
    return this.add('reportStaging', { stagingGuid }, jobId('report-staging', stagingGuid), 'again');
  }

  /** One report per crash: the id is the pod and the restart it reports. */
  reportCrash(payload: JobPayload<'reportCrash'>): Promise<void> {
    return this.add('reportCrash', payload, jobId('crash', payload.podUid, payload.crashCount), 'once');
  }

  /** Converge one LRP (see convergeJobOptions). */
  async convergeLrp(payload: JobPayload<'convergeLrp'>, cause: string): Promise<void> {
    // One add, not a bulk of one: addBulk wraps its adds in a MULTI, which costs a lone job a quarter.
    const { name, data, opts } = convergeJob({ ...payload, cause });
    await this.queues[JOBS.convergeLrp.queue].add(name, data, opts);
  }

  /** Converge many LRPs in one round trip (BullMQ's addBulk: one MULTI of their adds). */
  async convergeLrps(items: readonly ConvergeItem[]): Promise<void> {
    if (items.length) await this.queues[JOBS.convergeLrp.queue].addBulk(items.map(convergeJob));
  }

  /**
   * Converge one LRP whose workload the watch saw deleted or changed by hand, with the `repair` hint;
   * `cause` names the event (the object's resourceVersion), so a finished converge of the same LRP never
   * holds it off. The de-duplication per LRP still holds (one runs, one waits); but where it would fold
   * this add into a converge already waiting, which lacks the hint and may find the workload stamped with
   * the record's generation (and so leave the edit in place), that waiting job is replaced by this one:
   * the repair does all it would have done. Answers whether a waiting job was replaced.
   */
  async repairLrp(processGuid: string, cause: string): Promise<boolean> {
    const queue = this.queues[JOBS.convergeLrp.queue];
    const { name, data, opts } = convergeJob({ processGuid, repair: true, cause });
    for (let attempt = 0; attempt < 3; attempt++) {
      const job = await queue.add(name, data, opts);
      // Added, or kept as the next run after an active converge (which then carries this repair).
      if (job.id === opts.jobId) return attempt > 0;
      const state = await queue.getJobState(job.id ?? '');
      if (state === 'active') return attempt > 0;
      // Folded into a waiting one: remove it and add again. One a worker took meanwhile refuses the
      // remove; the next add then goes in as its next run. One that finished meanwhile is simply gone.
      if (state !== 'completed' && state !== 'failed' && state !== 'unknown') {
        await queue.remove(job.id ?? '').catch(() => 0);
      }
    }
    return false;
  }

  async stopInstance(payload: JobPayload<'stopInstance'>): Promise<void> {
    const spec = JOBS.stopInstance;
    await this.queues[spec.queue].add(spec.name, spec.schema.parse(payload), {
      jobId: jobId('stop', payload.processGuid, payload.index, payload.podName),
    });
  }

  /** A rollout's next check, `delayMs` from now; one job per LRP, generation and check. */
  async settleRollout(payload: JobPayload<'settleRollout'>, delayMs: number): Promise<void> {
    const spec = JOBS.settleRollout;
    await this.queues[spec.queue].add(spec.name, spec.schema.parse(payload), {
      jobId: jobId('rollout', payload.processGuid, payload.generation, payload.check),
      delay: delayMs,
    });
  }

  /**
   * A rollout check the watch asks for (old-revision pods not ready), now and once: one job per LRP and
   * generation while it waits or runs; a finished one is removed first, so each time the watch sees
   * such pods again they are looked at again.
   */
  async settleRolloutNow(processGuid: string, generation: number): Promise<void> {
    const spec = JOBS.settleRollout;
    const queue = this.queues[spec.queue];
    const id = jobId('rollout', processGuid, generation, 'watch');
    await removeCompleted(queue, id);
    await queue.add(spec.name, spec.schema.parse({ processGuid, generation, check: 0, once: true }), {
      jobId: id,
    });
  }

  /** Installs (idempotently) the repeating sync; every process may call it at start. */
  async scheduleSync(everyMs: number): Promise<void> {
    const spec = JOBS.syncCluster;
    await this.queues[spec.queue].upsertJobScheduler(
      'cluster-sync',
      { every: everyMs },
      { name: spec.name, data: {}, opts: { removeOnComplete: 50, removeOnFail: 500, attempts: 1 } },
    );
  }

  /** Runs a sync now (e.g. at start), besides the schedule. */
  async syncNow(): Promise<void> {
    const spec = JOBS.syncCluster;
    await this.queues[spec.queue].add(
      spec.name,
      {},
      { jobId: jobId('sync-now', Date.now()), removeOnComplete: 50, removeOnFail: 500 },
    );
  }

  async close(): Promise<void> {
    await Promise.all(Object.values(this.queues).map((q) => q.close()));
  }
}
