/**
 * Two workers share one Lease: exactly one holds it and lists, nobody sends a LIST while nothing changes
 * (even across cut watches), and the other takes over and keeps the cache fresh when the holder closes.
 */
import { Queue } from 'bullmq';
import { QUEUE_NAMES } from '@opi/queue';
import { type Service, call, eventually, startService } from '../../support/service.js';
import { desire, lrp, podAt, replacePod, settledEntry } from './lrps.js';
import { WATCHED_KINDS, counter, listsOf } from './worker-metrics.js';

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

describe('two workers share one Lease', () => {
  let s: Service;
  beforeAll(async () => {
    // The service's default sync (every 500 ms) runs throughout: it reads the watched state, never lists.
    s = await startService({ workers: 2 });
  });
  afterAll(async () => {
    await s.close();
  });

  const holders = () => s.workers.filter((w) => w.leader.isLeader());

  it('has exactly one holder, and nobody sends a LIST while nothing changes, even across cut watches', async () => {
    const holder = await eventually(async () => {
      const h = holders();
      return h.length === 1 && h[0]!.leader.cache() ? h[0] : undefined;
    }, 'one worker to hold the Lease and list');
    const a = lrp(1, 'two');
    await desire(s, a, { instances: 2 });
    await settledEntry(s, a, 2);
    for (const w of s.workers) {
      expect(await counter(w.metrics.cacheWriter)).toBe(w === holder ? 1 : 0);
      // Only the holder ever listed: one list per kind (each fits one page).
      expect(await listsOf(w)).toBe(w === holder ? WATCHED_KINDS.length : 0);
    }

    // The simulator counts every LIST it answers, whoever asks; the test itself asks nothing meanwhile.
    let simLists = 0;
    const decide = s.sim.faults.decide.bind(s.sim.faults);
    s.sim.faults.decide = (verb, resource) => {
      if (verb === 'list') simLists++;
      return decide(verb, resource);
    };
    const syncQueue = new Queue(QUEUE_NAMES.sync, { connection: s.redis, prefix: s.settings.queuePrefix });
    try {
      const syncs = await syncQueue.getCompletedCount();
      const restarts = await counter(holder.metrics.watchRestarts);
      await sleep(2000);
      // A cut watch resumes from the version it saw: no LIST either.
      expect(s.sim.faults.cutWatches()).toBeGreaterThanOrEqual(3);
      await sleep(3000);
      expect(simLists).toBe(0);
      expect(await listsOf(holder)).toBe(WATCHED_KINDS.length);
      expect(await counter(holder.metrics.watchRestarts)).toBeGreaterThan(restarts);
      for (const kind of WATCHED_KINDS) {
        expect(await counter(holder.metrics.watchRelists, { kind })).toBe(1);
      }
      // The sync ran meanwhile (every 500 ms here), from the watched state.
      expect(await syncQueue.getCompletedCount()).toBeGreaterThan(syncs);
    } finally {
      s.sim.faults.decide = decide;
      await syncQueue.close();
    }
    for (const w of s.workers) expect(w.leader.isLeader()).toBe(w === holder);
  });

  it('hands over when the holder closes; the other worker keeps the cache fresh', async () => {
    const a = lrp(1, 'two');
    const holder = holders()[0]!;
    const other = s.workers.find((w) => w !== holder)!;
    await holder.close();
    s.workers.splice(s.workers.indexOf(holder), 1);
    await eventually(async () => other.leader.cache(), 'the other worker to take the Lease and list');
    expect(await counter(other.metrics.cacheWriter)).toBe(1);

    const before = await settledEntry(s, a, 2);
    const gone = podAt(before, 0);
    const after = await replacePod(s, a, 2, gone);
    expect(podAt(after, 1)).toBe(podAt(before, 1));
    // A scale-up shows too.
    const r = await call(s.base, 'POST', `/apps/${a.pg}`, {
      guid: a.guid,
      version: a.version,
      update: { instances: 3, annotation: 'scaled' },
    });
    expect(r.status).toBe(200);
    await settledEntry(s, a, 3);
  });
});
