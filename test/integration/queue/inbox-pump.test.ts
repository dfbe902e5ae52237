/**
 * The converge inbox and its pump, on real Redis and BullMQ: a desire, an update and a stop each ask for
 * their converge in the script that records them; the pump moves those into the lrp queue with the ids
 * the API's own adds used to have (so the queue's de-duplication works as before), keeps entries through
 * a failed add, drops what it cannot read, and stops without losing what it took. The backlog that
 * back-pressure reads counts the inbox.
 */
import { randomUUID } from 'node:crypto';
import type { Redis } from 'ioredis';
import { createLogger } from '@opi/logging';
import { JobProducer, QueueBacklog, jobId, withConvergeInbox, workerConnection } from '@opi/queue';
import { type ConvergeInbox, StateStore, inboxEntry, inboxEntryLua, parseInboxEntry } from '@opi/state';
import { type InboxPump, startInboxPump } from '../../../apps/worker/src/inbox-pump.js';
import { sampleLrp } from '../../../libs/translation/src/lrp.fixture.js';
import { eventually } from '../../support/eventually.js';
import { deletePrefix } from '../../support/redis-keys.js';

const logger = createLogger({ level: 'silent', pretty: false });

function newLrp(): ReturnType<typeof sampleLrp> {
  const guid = randomUUID();
  const version = randomUUID();
  return sampleLrp({ processGuid: `${guid}-${version}`, guid, version });
}

describe('the converge inbox', () => {
  let redis: Redis;
  let prefix: string;
  let store: StateStore;
  let inbox: ConvergeInbox;
  let producer: JobProducer;
  let pump: InboxPump | undefined;

  const start = (p: Pick<JobProducer, 'convergeLrps'> = producer, retryMs = 20): InboxPump =>
    (pump = startInboxPump(
      { inbox, blocking: redis.duplicate(), producer: p as JobProducer, logger },
      { waitSeconds: 1, retryMs },
    ));
  const waiting = async (): Promise<{ id: string; data: unknown }[]> =>
    (await producer.queues.lrp.getJobs(['wait', 'prioritized'])).map((j) => ({
      id: j.id ?? '',
      data: j.data,
    }));

  beforeEach(() => {
    prefix = `test-inbox-${randomUUID().slice(0, 8)}`;
    store = new StateStore(redis, prefix);
    inbox = store.inbox;
    producer = new JobProducer({ connection: redis, prefix, attempts: 2 });
  });
  afterEach(async () => {
    await pump?.close();
    pump = undefined;
    for (const q of Object.values(producer.queues)) await q.obliterate({ force: true });
    await producer.close();
    await deletePrefix(redis, prefix);
  });
  beforeAll(() => {
    redis = workerConnection(process.env['REDIS_URL'] ?? 'redis://127.0.0.1:6379');
  });
  afterAll(async () => {
    await redis.quit();
  });

  it('holds one entry per recorded write, in the format the pump reads, and none for a re-desire', async () => {
    const lrp = newLrp();
    const desired = await store.desire(lrp);
    await store.desire(lrp);
    const updated = await store.update(lrp.processGuid, { instances: 3, annotation: 'a' });
    const stopped = await store.stop(lrp.processGuid, lrp.guid, lrp.version);
    const raw = await redis.lrange(store.keys.inbox, 0, -1);
    // DESIRE writes its entry in Lua: the same text inboxEntry writes.
    expect(raw).toEqual([
      inboxEntry(lrp.processGuid, desired.generation, true),
      inboxEntry(lrp.processGuid, updated?.generation ?? -1),
      inboxEntry(lrp.processGuid, stopped.generation),
    ]);
    expect(raw.map((r) => parseInboxEntry(r))).toEqual([
      { processGuid: lrp.processGuid, cause: `g${desired.generation}`, fresh: true },
      { processGuid: lrp.processGuid, cause: `g${updated?.generation}`, fresh: false },
      { processGuid: lrp.processGuid, cause: `g${stopped.generation}`, fresh: false },
    ]);
    // The sync's adoption of a Deployment asks for nothing: the sync enqueues what it converges itself.
    const adopted = newLrp();
    expect(await store.adopt(adopted)).toBe(true);
    expect(await redis.llen(store.keys.inbox)).toBe(3);
  });

  it('reads the entry the scripts build in Lua from the same definition, for any process guid', async () => {
    for (const [pg, fresh] of [
      ['a b c', true],
      ['x\ny', false],
      ["it's", true],
    ] as const) {
      const written = await redis.eval(`return ${inboxEntryLua('ARGV[1]', 'ARGV[2]', fresh)}`, 0, '42', pg);
      expect(written).toBe(inboxEntry(pg, 42, fresh));
      expect(parseInboxEntry(String(written))).toEqual({ processGuid: pg, cause: 'g42', fresh });
    }
  });

  it('moves writes into the lrp queue with their generation as the job id, one job per LRP while it waits', async () => {
    const a = newLrp();
    const b = newLrp();
    const da = await store.desire(a);
    await store.update(a.processGuid, { instances: 2, annotation: 'x' });
    const db = await store.desire(b);
    start();
    await eventually(async () => (await redis.llen(store.keys.inbox)) === 0, 'the inbox to empty');
    const jobs = await eventually(async () => {
      const w = await waiting();
      return w.length === 2 ? w : undefined;
    }, 'two waiting jobs');
    // The update's converge met the desire's still waiting: de-duplicated, as when the API added both.
    expect(jobs.sort((x, y) => x.id.localeCompare(y.id))).toEqual(
      [
        {
          id: jobId('converge', a.processGuid, `g${da.generation}`),
          data: { processGuid: a.processGuid, fresh: true },
        },
        {
          id: jobId('converge', b.processGuid, `g${db.generation}`),
          data: { processGuid: b.processGuid, fresh: true },
        },
      ].sort((x, y) => x.id.localeCompare(y.id)),
    );
    expect(pump?.moved()).toBe(3);
  });

  it('moves a burst in batches', async () => {
    const lrps = Array.from({ length: 300 }, newLrp);
    await Promise.all(lrps.map((l) => store.desire(l)));
    const batches: number[] = [];
    start({
      convergeLrps: (items) => {
        batches.push(items.length);
        return producer.convergeLrps(items);
      },
    });
    await eventually(async () => (await producer.queues.lrp.getWaitingCount()) === 300, '300 jobs');
    expect(batches.reduce((n, b) => n + b, 0)).toBe(300);
    // Waiting before the pump started: the first take brings the first entry and up to 499 more.
    expect(batches[0]).toBe(300);
  });

  it('keeps the entries of a failed add and moves them on the next try', async () => {
    const lrp = newLrp();
    await store.desire(lrp);
    let failures = 2;
    start({
      convergeLrps: (items) => {
        if (failures-- > 0) return Promise.reject(new Error('injected: READONLY'));
        return producer.convergeLrps(items);
      },
    });
    await eventually(async () => (await waiting()).length === 1, 'the job, after two failed adds');
    expect(failures).toBe(-1);
    expect(await redis.llen(store.keys.inbox)).toBe(0);
  });

  it('drops an entry it cannot read or the queue would refuse, and moves the others', async () => {
    const lrp = newLrp();
    await redis.rpush(store.keys.inbox, 'not an entry', inboxEntry('pg', 3), inboxEntry('x'.repeat(128), 4));
    await store.desire(lrp);
    start();
    await eventually(async () => (await waiting()).length === 1, 'the readable entry moved');
    expect(await redis.llen(store.keys.inbox)).toBe(0);
    expect(pump?.moved()).toBe(1);
  });

  it('stops while blocked, without taking anything after', async () => {
    start();
    await new Promise((r) => setTimeout(r, 50));
    await pump?.close();
    pump = undefined;
    await store.desire(newLrp());
    await new Promise((r) => setTimeout(r, 200));
    expect(await redis.llen(store.keys.inbox)).toBe(1);
    expect(await waiting()).toEqual([]);
  });

  it('counts the inbox as the lrp queue backlog, for back-pressure and the depth metric', async () => {
    await store.desire(newLrp());
    await store.desire(newLrp());
    await producer.convergeLrp({ processGuid: 'already-queued' }, 'test');
    const counted = withConvergeInbox(producer.queues, inbox);
    expect(await new QueueBacklog(counted).depth('lrp')).toBe(3);
    expect((await counted['lrp']?.getJobCounts('waiting', 'active'))?.['waiting']).toBe(3);
    expect(await new QueueBacklog(counted).depth('task')).toBe(0);
  });
});
