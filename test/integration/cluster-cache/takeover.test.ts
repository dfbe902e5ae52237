/**
 * A worker taking the Lease: its /readyz is 503 until the first list of every kind is applied, and a claim
 * of the cache that Redis refuses is tried again until the holder watches and writes.
 */
import { keys } from '@opi/state';
import type { RunningWorker } from '../../../apps/worker/src/index.js';
import { type Service, eventually, startService } from '../../support/service.js';
import { desire, lrp, settledEntry } from './lrps.js';
import { WATCHED_KINDS, counter } from './worker-metrics.js';

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

describe('worker /readyz and the watches', () => {
  let s: Service;
  beforeAll(async () => {
    s = await startService({ workers: 0, workerMetrics: true });
  });
  afterAll(async () => {
    await s.close();
  });

  interface Readiness {
    status: string;
    checks: Record<string, { ok: boolean; message: string }>;
  }
  const readyz = async (w: RunningWorker): Promise<{ status: number; body: Readiness }> => {
    const res = await fetch(`http://127.0.0.1:${w.metricsPort}/readyz`);
    return { status: res.status, body: (await res.json()) as Readiness };
  };

  it('is 503 until the first list of every kind is applied, then 200 naming the kinds', async () => {
    // Every LIST fails for now: the worker takes the Lease but cannot list.
    s.sim.faults.set({ errorRate: 1, errorCodes: [500], verbs: ['list'] });
    const w = await s.addWorker();
    await eventually(
      async () =>
        w.leader.isLeader() && (await counter(w.metrics.kubeRequests, { verb: 'list', status: '500' })) >= 3,
      'the Lease and failed lists',
    );
    const notYet = await readyz(w);
    expect(notYet.status).toBe(503);
    expect(notYet.body.checks['redis']?.ok).toBe(true);
    expect(notYet.body.checks['kubernetes']?.ok).toBe(true);
    expect(notYet.body.checks['watches']?.ok).toBe(false);
    for (const kind of WATCHED_KINDS) {
      expect(notYet.body.checks['watches']?.message).toContain(`${kind}: not listed yet`);
    }
    expect(w.leader.cache()).toBeUndefined();

    s.sim.faults.reset();
    const ready = await eventually(async () => {
      const r = await readyz(w);
      return r.status === 200 ? r : undefined;
    }, '/readyz 200');
    expect(ready.body.status).toBe('ok');
    expect(ready.body.checks['watches']).toEqual({
      ok: true,
      message: 'watching: deployments 0, statefulsets 0, pods 0, jobs 0, events 0',
    });
  });
});

describe('a cache claim that fails at takeover', () => {
  let s: Service;
  beforeAll(async () => {
    s = await startService({ workers: 0 });
  });
  afterAll(async () => {
    await s.close();
  });

  it('is tried again: the holder still comes to watch and write the cache', async () => {
    // Any error answer to the claim script will do (a failover's READONLY, OOM, …): here the fence key
    // holds the wrong type, so the script fails until the key is gone.
    const fence = keys(s.settings.queuePrefix).cacheFence;
    await s.redis.hset(fence, 'wrong', 'type');
    const w = await s.addWorker();
    await eventually(
      async () => (await counter(w.metrics.cacheWriter)) === 1,
      'the worker to take the Lease',
    );
    // The claim was sent the moment it took the Lease; its error answer is back long before this.
    await sleep(1000);
    await s.redis.del(fence);
    await eventually(async () => w.leader.cache(), 'the holder to claim the cache and list', 20_000);
    expect(w.leader.isLeader()).toBe(true);
    const a = lrp(1, 'claim');
    await desire(s, a);
    await settledEntry(s, a, 1);
  });
});
