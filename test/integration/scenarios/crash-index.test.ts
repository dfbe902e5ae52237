/**
 * A crash report names the instance by the index `/instances` shows for it: after a scale-down a
 * Deployment's pod can keep an index at or above the desired count (the cache writer keeps indexes while
 * pods live), and both then show it at the free lower index (shownIndexes).
 */
import { type CachedInstances, keys } from '@opi/state';
import { type FakeCc, startFakeCc } from '../../support/fake-cc.js';
import { type Lrp, cacheEntry, desire, instances, lrp } from '../cluster-cache/lrps.js';
import { HOUR_MS } from '../cluster-cache/queues.js';
import { type Service, eventually, startService } from '../../support/service.js';

interface CrashReport {
  instance: string;
  index: number;
  crash_count: number;
}

describe('crash reports and /instances agree on the index', () => {
  let cc: FakeCc;
  let s: Service;
  beforeAll(async () => {
    cc = await startFakeCc();
    s = await startService({
      env: {
        OPI_WORKLOAD_KIND: 'deployment',
        OPI_RESYNC_INTERVAL_MS: HOUR_MS,
        CC_INTERNAL_URL: cc.url,
        OPI_CALLBACK_BACKOFF_MS: '500',
      },
    });
  });
  afterAll(async () => {
    await s.close();
    await cc.close();
  });

  const reports = (a: Lrp): CrashReport[] =>
    cc.callsTo(`/internal/v4/apps/${a.pg}/crashed`).map((c) => c.body as CrashReport);

  it('after a scale-down left a pod at an index above the desired count', async () => {
    const a = lrp(1, 'crashidx');
    await desire(s, a, {
      instances: 2,
      environment: { KUBESIM_BEHAVIOUR: 'crash', KUBESIM_EXIT_CODE: '3', KUBESIM_RUN_MS: '200' },
    });
    const two = await eventually(async () => {
      const e = await cacheEntry(s, a);
      return e?.instances.length === 2 ? e : undefined;
    }, 'two instances in the cache');
    const moved = two.instances.find((i) => i.index === 1)?.podName ?? '';
    // What a scale-down from three can leave: the pods at 0 and 2 (written as the cache writer would
    // have; it keeps each live pod's index from then on).
    const gap = async (): Promise<CachedInstances | undefined> => {
      const e = await cacheEntry(s, a);
      if (e?.instances.find((i) => i.podName === moved)?.index === 2) return e;
      const seeded: CachedInstances = {
        instances: (e ?? two).instances.map((i) => (i.podName === moved ? { ...i, index: 2 } : i)),
      };
      await s.redis.hset(keys(s.settings.queuePrefix).instances, a.pg, JSON.stringify(seeded));
      return undefined;
    };
    await eventually(gap, 'the pod held at index 2');
    const before = Math.max(
      0,
      ...reports(a)
        .filter((r) => r.instance === moved)
        .map((r) => r.crash_count),
    );
    const later = await eventually(async () => {
      const rs = reports(a).filter((r) => r.instance === moved && r.crash_count > before + 1);
      return rs.length > 0 ? rs : undefined;
    }, `crash reports of ${moved} after the gap`);
    // The cache still holds it at 2; /instances and its crash reports show it at 1.
    expect((await cacheEntry(s, a))?.instances.find((i) => i.podName === moved)?.index).toBe(2);
    expect((await instances(s, a)).map((i) => i.index)).toEqual([0, 1]);
    for (const r of later) expect(r.index).toBe(1);
  }, 90_000);
});
