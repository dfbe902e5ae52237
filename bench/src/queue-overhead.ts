/**
 * The queue scenario: jobs through the service's JobProducer to a no-op handler, against raw BullMQ
 * with its defaults and with the same job options.
 */
import { Queue, Worker } from 'bullmq';
import { Redis } from 'ioredis';
import { JobProducer, QUEUE_NAMES, convergeJobOptions, defaultJobOptions } from '@opi/queue';
import { uuid } from '@opi/contract/testing';
import { VERSION } from './bodies.js';
import { REDIS_URL, median } from './common.js';
import { plan } from './options.js';
import type { Row } from './report.js';

/**
 * Jobs/s from the first add to the last completion, 64 adds in flight, a no-op processor at the workers'
 * default concurrency (16): the service's JobProducer.convergeLrp against raw BullMQ adds.
 */
export async function queueOverhead(prefix: string): Promise<Row[]> {
  const n = plan.jobs;
  const run = async (
    queueName: string,
    qprefix: string,
    add: (i: number) => Promise<unknown>,
  ): Promise<number> => {
    const conn = new Redis(REDIS_URL, { maxRetriesPerRequest: null });
    let done = 0;
    let finish = (): void => undefined;
    const all = new Promise<void>((r) => {
      finish = r;
    });
    const worker = new Worker(queueName, () => Promise.resolve(), {
      connection: conn,
      prefix: qprefix,
      concurrency: 16,
    });
    worker.on('completed', () => {
      if (++done === n) finish();
    });
    await worker.waitUntilReady();
    const t = performance.now();
    for (let i = 0; i < n; i += 64) {
      const batch: Promise<unknown>[] = [];
      for (let j = i; j < Math.min(n, i + 64); j++) batch.push(add(j));
      await Promise.all(batch);
    }
    await all;
    const rate = n / ((performance.now() - t) / 1000);
    await worker.close();
    conn.disconnect();
    return rate;
  };
  // Alternating rounds, the median ratio: one round of each swings by a third on a shared machine. Raw
  // BullMQ runs twice: with its defaults, and with the service's job options (retention, de-duplication,
  // attempts), so the wrapper's own cost and the options' cost are told apart.
  const conn = new Redis(REDIS_URL);
  const raw = new Queue('raw', { connection: conn, prefix: `${prefix}-raw` });
  const same = new Queue('same', {
    connection: conn,
    prefix: `${prefix}-raw`,
    defaultJobOptions: defaultJobOptions(5),
  });
  // Its own prefix: the API's ingest left convergeLrp jobs in the service's lrp queue.
  const producer = new JobProducer({ connection: conn, prefix: `${prefix}-q`, attempts: 5 });
  const rounds: { raw: number; same: number; ours: number }[] = [];
  for (let round = 0; round < 3; round++) {
    const pg = (i: number): string => `${uuid(i, `q${round}`)}-${VERSION}`;
    rounds.push({
      raw: await run('raw', `${prefix}-raw`, (i) => raw.add('noop', { i })),
      same: await run('same', `${prefix}-raw`, (i) =>
        same.add('noop', { processGuid: pg(i) }, convergeJobOptions(pg(i), 'g1')),
      ),
      ours: await run(QUEUE_NAMES.lrp, `${prefix}-q`, (i) =>
        producer.convergeLrp({ processGuid: pg(i) }, 'g1'),
      ),
    });
  }
  await raw.close();
  await same.close();
  await producer.close();
  conn.disconnect();
  const defaults: Row = {
    scenario: 'queue: JobProducer + no-op handler',
    size: `${n} jobs`,
    metric: 'jobs/s, raw BullMQ with its defaults',
    ours: median(rounds.map((r) => r.ours)),
    baseline: median(rounds.map((r) => r.raw)),
    unit: 'jobs/s',
    ratio: median(rounds.map((r) => r.ours / r.raw)),
    ratioMeaning: '× raw BullMQ',
    target: '—',
    met: undefined,
    note: 'what the job options cost: retention of finished jobs, de-duplication per LRP, attempts',
  };
  const rawRate = median(rounds.map((r) => r.same));
  const oursRate = median(rounds.map((r) => r.ours));
  const ratio = median(rounds.map((r) => r.ours / r.same));
  const sameOptions: Row = {
    scenario: 'queue: JobProducer + no-op handler',
    size: `${n} jobs`,
    metric: 'jobs/s, raw BullMQ with the same job options',
    ours: oursRate,
    baseline: rawRate,
    unit: 'jobs/s',
    ratio,
    ratioMeaning: '× raw BullMQ',
    target: '≥ 0.8× raw',
    met: ratio >= 0.8,
    note: `the wrapper's own cost (typed payload check, ids); median of 3 alternating rounds`,
  };
  return [defaults, sameOptions];
}
