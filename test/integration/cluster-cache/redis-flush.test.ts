/**
 * A Redis FLUSHDB under the watched cache: the worker relists on its own and the records, the cache (the
 * same pods) and the running tasks come back, the fence kept.
 */
import { type CachedInstances, keys } from '@opi/state';
import { taskBody, uuid } from '@opi/contract/testing';
import { type FakeCc, startFakeCc } from '../../support/fake-cc.js';
import {
  WORKLOAD_KIND,
  type Service,
  call,
  deployedGuids,
  eventually,
  schedulingInfos,
  startService,
} from '../../support/service.js';
import { flushServiceDb } from './flush.js';
import { desire, lrp, settledEntry } from './lrps.js';
import { HOUR_MS } from './queues.js';
import { taskGuids } from './tasks.js';
import { WATCHED_KINDS, counter } from './worker-metrics.js';

describe('a Redis FLUSHDB', () => {
  // A database of its own, flushed only when it holds nothing but this service's keys.
  // Its own database per workload mode: the two jest projects run at the same time.
  const DB = WORKLOAD_KIND === 'deployment' ? 13 : 14;
  let cc: FakeCc;
  let s: Service;
  beforeAll(async () => {
    cc = await startFakeCc();
    s = await startService({
      workers: 1,
      redisDb: DB,
      env: { OPI_RESYNC_INTERVAL_MS: HOUR_MS, CC_INTERNAL_URL: cc.url },
    });
  });
  afterAll(async () => {
    await s.close();
    await cc.close();
  });

  it('is relisted: the records, the cache and the running tasks come back', async () => {
    const apps = [lrp(1, 'flush'), lrp(2, 'flush'), lrp(3, 'flush')];
    for (const [i, a] of apps.entries()) await desire(s, a, { instances: i + 1, last_updated: `t${i}` });
    const task = uuid(1, 'flusht');
    expect(
      (await call(s.base, 'POST', `/tasks/${task}`, taskBody(cc.url, task, { KUBESIM_RUN_MS: '600000' })))
        .status,
    ).toBe(202);
    const before = new Map<string, CachedInstances>();
    for (const [i, a] of apps.entries()) before.set(a.pg, await settledEntry(s, a, i + 1));
    expect(await taskGuids(s)).toEqual([task]);
    const k = keys(s.settings.queuePrefix);
    const fence = await s.redis.get(k.cacheFence);
    expect(fence).not.toBeNull();

    await flushServiceDb(s, DB);
    expect((await schedulingInfos(s.base)).size).toBe(0);

    const infos = await eventually(async () => {
      const m = await schedulingInfos(s.base);
      return m.size === apps.length ? m : undefined;
    }, 'the records to be rebuilt from the cluster');
    for (const [i, a] of apps.entries()) {
      expect(infos.get(a.pg)).toBe(`t${i}`);
      // The same pods (the flush lost which index each had: they are assigned again, 0..n-1).
      const entry = await settledEntry(s, a, i + 1);
      const names = (e: CachedInstances): string[] => e.instances.map((x) => x.podName).sort();
      expect(names(entry)).toEqual(names(before.get(a.pg)!));
    }
    await eventually(async () => (await taskGuids(s)).includes(task), 'the running task to be listed again');
    // The worker noticed on its own and listed every kind again (the periodic sync is an hour away).
    for (const kind of WATCHED_KINDS) {
      expect(await counter(s.workers[0]!.metrics.watchRelists, { kind, reason: 'requested' })).toBe(1);
    }
    expect(await s.redis.get(k.cacheFence)).toBe(fence);
    expect(await s.redis.get(k.cacheEpoch)).not.toBeNull();
    expect((await deployedGuids(s)).size).toBe(apps.length);
  }, 90_000);
});
