/**
 * The instances cache as the sync writes it: in chunks, into a snapshot of its own, swapped in whole.
 * Readers see the previous snapshot or the next, never a mix, whatever two syncs do at once.
 */
import { randomUUID } from 'node:crypto';
import { Redis } from 'ioredis';
import { type CachedInstances, StateStore } from '@opi/state';
import { deletePrefix } from '../support/redis-keys.js';

const prefix = `test-snapshot-${randomUUID().slice(0, 8)}`;
let redis: Redis;
let store: StateStore;

beforeAll(() => {
  redis = new Redis(process.env['REDIS_URL'] ?? 'redis://127.0.0.1:6379');
  store = new StateStore(redis, prefix);
});
afterAll(async () => {
  await deletePrefix(redis, prefix);
  redis.disconnect();
});

function entry(pods: Record<string, number>): string {
  const cached: CachedInstances = {
    assignments: pods,
    instances: Object.entries(pods).map(([podName, index]) => ({
      index,
      podName,
      sinceNs: '1',
      state: 'RUNNING',
    })),
  };
  return JSON.stringify(cached);
}

const meta = (pods: number) => ({ syncedAt: Date.now(), durationMs: 1, deployments: pods, pods });

async function snapshotKeys(): Promise<string[]> {
  return redis.keys(store.keys.instancesNext('*'));
}

describe('instances snapshots', () => {
  it('is invisible until committed, then replaces the whole cache (more entries than one chunk)', async () => {
    await store.writeCache(new Map([['pg-old', entry({ 'old-0': 0 })]]), meta(1));
    const snapshot = store.instancesSnapshot();
    for (let i = 0; i < 2500; i++) await snapshot.add(`pg-${i}`, entry({ [`pod-${i}`]: 0 }));
    // Two chunks are written by now, and readers still see the old cache.
    expect(await redis.hlen(store.keys.instances)).toBe(1);
    expect(await store.cachedInstances('pg-old')).toBeDefined();

    await snapshot.commit(meta(2500));
    expect(await redis.hlen(store.keys.instances)).toBe(2500);
    expect(await store.cachedInstances('pg-old')).toBeUndefined();
    expect((await store.cachedInstances('pg-2499'))?.assignments).toEqual({ 'pod-2499': 0 });
    expect(await redis.pttl(store.keys.instances)).toBe(-1);
    expect((await store.syncMeta())?.pods).toBe(2500);
    expect(await snapshotKeys()).toEqual([]);
  });

  it('keeps two snapshots written at once apart: the last committed is the cache, whole', async () => {
    const a = store.instancesSnapshot();
    const b = store.instancesSnapshot();
    for (let i = 0; i < 1500; i++) {
      await a.add(`pg-a-${i}`, entry({ a: i }));
      await b.add(`pg-b-${i}`, entry({ b: i }));
    }
    await a.commit(meta(1500));
    await b.commit(meta(1500));
    const fields = await redis.hkeys(store.keys.instances);
    expect(fields).toHaveLength(1500);
    expect(fields.every((f) => f.startsWith('pg-b-'))).toBe(true);
  });

  it('leaves the cache as it was when abandoned, and an unfinished one expires by itself', async () => {
    await store.writeCache(new Map([['pg-kept', entry({ k: 0 })]]), meta(1));
    const abandoned = store.instancesSnapshot();
    for (let i = 0; i < 1200; i++) await abandoned.add(`pg-${i}`, entry({ [`p${i}`]: 0 }));
    const [key] = await snapshotKeys();
    expect(await redis.pttl(key ?? '')).toBeGreaterThan(0);
    await abandoned.abandon();
    expect(await snapshotKeys()).toEqual([]);
    expect(await redis.hkeys(store.keys.instances)).toEqual(['pg-kept']);
  });

  it('empties the cache when committed with nothing (no pods left)', async () => {
    await store.writeCache(new Map([['pg-x', entry({ x: 0 })]]), meta(1));
    await store.instancesSnapshot().commit(meta(0));
    expect(await redis.exists(store.keys.instances)).toBe(0);
  });

  it('reads previous assignments per LRP in one call, an empty Map for one never cached', async () => {
    await store.writeCache(
      new Map([
        ['pg-1', entry({ 'p-a': 0, 'p-b': 1 })],
        ['pg-2', entry({ 'p-c': 2 })],
      ]),
      meta(3),
    );
    const [one, never, two] = await store.cachedAssignments(['pg-1', 'pg-none', 'pg-2']);
    expect(one).toEqual(
      new Map([
        ['p-a', 0],
        ['p-b', 1],
      ]),
    );
    expect(never).toEqual(new Map());
    expect(two).toEqual(new Map([['p-c', 2]]));
    expect(await store.cachedAssignments([])).toEqual([]);
  });
});
