/**
 * A repair the watch asks for is never swallowed by BullMQ: not by a finished converge of the same LRP
 * (each repair's id names its event), not by the de-duplication folding it into a converge already
 * waiting without the hint (that one is replaced), and it still waits behind an active converge as its
 * next run. A rollout check from the watch runs again after an earlier one finished. Real Redis and BullMQ.
 */
import { randomUUID } from 'node:crypto';
import { type Job, Worker } from 'bullmq';
import type { Redis } from 'ioredis';
import { JOBS, JobProducer, QUEUE_NAMES, workerConnection } from '@opi/queue';
import { deletePrefix } from '../../support/redis-keys.js';

describe('repairs from the watch', () => {
  let redis: Redis;
  let prefix: string;
  let producer: JobProducer;
  beforeAll(() => {
    redis = workerConnection(process.env['REDIS_URL'] ?? 'redis://127.0.0.1:6379');
  });
  beforeEach(() => {
    prefix = `test-repair-${randomUUID().slice(0, 8)}`;
    producer = new JobProducer({ connection: redis, prefix, attempts: 1 });
  });
  afterEach(async () => {
    await producer.close();
    await deletePrefix(redis, prefix);
  });
  afterAll(async () => {
    await redis.quit();
  });

  const lrpQueue = () => producer.queues[QUEUE_NAMES.lrp];
  const pending = async (): Promise<Job[]> => lrpQueue().getJobs(['waiting', 'delayed', 'active']);

  /** A worker on the lrp queue that holds each job until `release` is called; the jobs it saw. */
  function holdingWorker(): { seen: Job[]; release(): void; started: Promise<void>; close(): Promise<void> } {
    const seen: Job[] = [];
    let release = (): void => undefined;
    let first = (): void => undefined;
    const started = new Promise<void>((r) => (first = r));
    const gate = new Promise<void>((r) => (release = r));
    const connection = redis.duplicate();
    const worker = new Worker(
      QUEUE_NAMES.lrp,
      async (job: Job) => {
        seen.push(job);
        first();
        await gate;
        return 'done';
      },
      { connection, prefix },
    );
    return {
      seen,
      release: () => {
        release();
      },
      started,
      close: async () => {
        await worker.close();
        await connection.quit();
      },
    };
  }

  it('replaces a converge waiting without the hint; a burst is one job', async () => {
    const pg = `${randomUUID()}-v1`;
    await producer.convergeLrp({ processGuid: pg }, 'sync1');
    await producer.repairLrp(pg, 'watch-e10');
    await producer.repairLrp(pg, 'watch-e11');
    const jobs = await pending();
    expect(jobs.map((j) => [j.name, j.data as unknown])).toEqual([
      [JOBS.convergeLrp.name, { processGuid: pg, repair: true }],
    ]);
  });

  it('waits behind an active converge as its next run, and is not held off by a finished one', async () => {
    const pg = `${randomUUID()}-v1`;
    const w = holdingWorker();
    try {
      await producer.convergeLrp({ processGuid: pg }, 'g1');
      await w.started;
      await producer.repairLrp(pg, 'watch-e20');
      w.release();
      const deadline = Date.now() + 10_000;
      while (w.seen.length < 2 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
      expect(w.seen.map((j) => j.data as unknown)).toEqual([
        { processGuid: pg },
        { processGuid: pg, repair: true },
      ]);
      // Both finished; a later event's repair still runs.
      await producer.repairLrp(pg, 'watch-e30');
      while (w.seen.length < 3 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
      expect(w.seen[2]?.data).toEqual({ processGuid: pg, repair: true });
    } finally {
      await w.close();
    }
  });

  it('runs a rollout check from the watch again once the earlier one finished', async () => {
    const pg = `${randomUUID()}-v1`;
    const w = holdingWorker();
    w.release();
    try {
      await producer.settleRolloutNow(pg, 7);
      await producer.settleRolloutNow(pg, 7);
      const deadline = Date.now() + 10_000;
      while (w.seen.length < 1 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
      while ((await lrpQueue().getCompletedCount()) < 1 && Date.now() < deadline)
        await new Promise((r) => setTimeout(r, 20));
      await producer.settleRolloutNow(pg, 7);
      while (w.seen.length < 2 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
      expect(w.seen.map((j) => j.data as unknown)).toEqual([
        { processGuid: pg, generation: 7, check: 0, once: true },
        { processGuid: pg, generation: 7, check: 0, once: true },
      ]);
    } finally {
      await w.close();
    }
  });
});
