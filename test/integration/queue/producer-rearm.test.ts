/**
 * A job that is due again is not dropped for an earlier finished job of the same id. BullMQ keeps a
 * finished job's id and ignores an add with it; the chaos suite found a task report that had run while
 * Redis was being flushed ("no record") hold off the task's real report for an hour. Real Redis and
 * BullMQ workers.
 */
import { randomUUID } from 'node:crypto';
import { type Job, UnrecoverableError, Worker } from 'bullmq';
import type { Redis } from 'ioredis';
import { JobProducer, QUEUE_NAMES, type QueueName, jobId, workerConnection } from '@opi/queue';
import { deletePrefix } from '../../support/redis-keys.js';

describe('jobs due again', () => {
  let redis: Redis;
  let prefix: string;
  let producer: JobProducer;

  beforeAll(() => {
    redis = workerConnection(process.env['REDIS_URL'] ?? 'redis://127.0.0.1:6379');
  });
  beforeEach(() => {
    prefix = `test-rearm-${randomUUID().slice(0, 8)}`;
    producer = new JobProducer({ connection: redis, prefix, attempts: 1 });
  });
  afterEach(async () => {
    await producer.close();
    await deletePrefix(redis, prefix);
  });
  afterAll(async () => {
    await redis.quit();
  });

  /** Runs every job waiting in `queue` once with `outcome`, then stops. */
  async function runAll(queue: QueueName, outcome: (job: Job) => string): Promise<void> {
    const waiting = await producer.queues[queue].getWaitingCount();
    let done = 0;
    const connection = redis.duplicate();
    const worker = new Worker(
      queue,
      (job: Job) => {
        const result = outcome(job);
        // Reports retry until their window ends; a permanent failure fails them at once.
        if (result === 'throw') throw new UnrecoverableError('injected failure');
        return Promise.resolve(result);
      },
      { connection, prefix, autorun: false },
    );
    const finished = new Promise<void>((resolve) => {
      const count = () => {
        if (++done >= waiting) resolve();
      };
      worker.on('completed', count);
      worker.on('failed', count);
    });
    void worker.run();
    await finished;
    await worker.close();
    await connection.quit();
  }

  const state = (queue: QueueName, id: string) => producer.queues[queue].getJobState(id);

  it('a task report that completed without posting ("no record") is queued again', async () => {
    const guid = randomUUID();
    const id = jobId('report-task', guid);
    await producer.reportTask(guid);
    await runAll(QUEUE_NAMES.callback, () => 'no record');
    expect(await state(QUEUE_NAMES.callback, id)).toBe('completed');

    await producer.reportTask(guid);
    expect(await state(QUEUE_NAMES.callback, id)).toBe('waiting');
    // Added twice while it waits: still one job.
    await producer.reportTask(guid);
    expect(await producer.queues.callback.getWaitingCount()).toBe(1);
  });

  it('the same holds for a staging report and a task run', async () => {
    const guid = randomUUID();
    await producer.reportStaging(guid);
    await producer.runTask(guid);
    await runAll(QUEUE_NAMES.callback, () => 'not finished');
    await runAll(QUEUE_NAMES.task, () => 'no record');
    await producer.reportStaging(guid);
    await producer.runTask(guid);
    expect(await state(QUEUE_NAMES.callback, jobId('report-staging', guid))).toBe('waiting');
    expect(await state(QUEUE_NAMES.task, jobId('run-task', guid))).toBe('waiting');
  });

  it('a failed report stays failed for operators, and a cancel or a crash report runs once', async () => {
    const guid = randomUUID();
    await producer.reportTask(guid);
    await runAll(QUEUE_NAMES.callback, () => 'throw');
    await producer.reportTask(guid);
    expect(await state(QUEUE_NAMES.callback, jobId('report-task', guid))).toBe('failed');

    await producer.cancelTask(guid);
    await runAll(QUEUE_NAMES.task, () => 'cancelled');
    await producer.cancelTask(guid);
    expect(await state(QUEUE_NAMES.task, jobId('cancel-task', guid))).toBe('completed');
  });
});
