/**
 * The instances cache as the cache writer replaces it (CacheWriter.snapshot): in chunks, into a snapshot
 * key of its own, swapped in whole with the sync facts. Readers (StateStore) see the previous hash or the
 * next, never a mix, whatever two snapshots do at once. Fencing and the cache epoch are
 * cache-fencing.test.ts's: here one writer holds the cache throughout.
 */
import { randomUUID } from 'node:crypto';
import { Redis } from 'ioredis';
import { type CachedInstances, CacheWriter, StateStore } from '@opi/state';
import { deletePrefix } from '../../support/redis-keys.js';

const prefix = `test-snapshot-${randomUUID().slice(0, 8)}`;
const TOKEN = 1;
let redis: Redis;
let store: StateStore;
let writer: CacheWriter;

beforeAll(() => {
  redis = new Redis(process.env['REDIS_URL'] ?? 'redis://127.0.0.1:6379');
  store = new StateStore(redis, prefix);
});
beforeEach(async () => {
  await deletePrefix(redis, prefix);
  writer = new CacheWriter(redis, prefix);
  await writer.claim(TOKEN);
});
afterAll(async () => {
  await deletePrefix(redis, prefix);
  redis.disconnect();
});

function entry(pods: Record<string, number>): string {
  const cached: CachedInstances = {
    instances: Object.entries(pods).map(([podName, index]) => ({
      index,
      podName,
      sinceNs: '1',
      state: 'RUNNING',
    })),
  };
  return JSON.stringify(cached);
}

/** The sync facts a commit records, as the cache writer passes them. */
const meta = (pods: number, syncedAt = Date.now()) => ({
  syncedAt: String(syncedAt),
  durationMs: '1',
  deployments: String(pods),
  pods: String(pods),
});

/** Replaces the whole cache with these entries. */
async function replaceCache(entries: Record<string, string>, facts = meta(Object.keys(entries).length)) {
  const snapshot = writer.snapshot(TOKEN);
  for (const [pg, e] of Object.entries(entries)) await snapshot.add(pg, e);
  await snapshot.commit(facts);
}

async function snapshotKeys(): Promise<string[]> {
  return redis.keys(writer.keys.instancesNext('*'));
}

describe('instances snapshots', () => {
  it('is written in chunks into a key of its own, invisible until committed, then is the whole cache', async () => {
    await replaceCache({ 'pg-old': entry({ 'old-0': 0 }) }, meta(1, 1000));
    const snapshot = writer.snapshot(TOKEN);
    for (let i = 0; i < 2500; i++) await snapshot.add(`pg-${i}`, entry({ [`pod-${i}`]: 0 }));
    // Chunks went out as they filled (the writer does not hold every entry until the commit), into a
    // key of their own: readers still see the old cache and its facts.
    const [next] = await snapshotKeys();
    expect(next).toBeDefined();
    expect(await redis.hlen(next!)).toBeGreaterThan(0);
    expect(snapshot.size).toBe(2500);
    expect(await redis.hkeys(store.keys.instances)).toEqual(['pg-old']);
    expect(await store.cachedInstances('pg-old')).toBeDefined();
    expect((await store.cacheMeta())?.syncedAt).toBe(1000);

    await snapshot.commit({ syncedAt: '2000', durationMs: '7', deployments: '2400', pods: '2500' });
    expect(await redis.hlen(store.keys.instances)).toBe(2500);
    expect(await store.cachedInstances('pg-old')).toBeUndefined();
    expect((await store.cachedAssignments(['pg-2499']))[0]).toEqual(new Map([['pod-2499', 0]]));
    expect(await redis.pttl(store.keys.instances)).toBe(-1);
    expect(await store.cacheMeta()).toEqual({
      syncedAt: 2000,
      durationMs: 7,
      deployments: 2400,
      statefulsets: 0,
      pods: 2500,
    });
    expect(await snapshotKeys()).toEqual([]);
  });

  it('shows readers the previous hash or the next, with its own facts, never a mix', async () => {
    const old = Object.fromEntries(Array.from({ length: 3000 }, (_, i) => [`pg-old-${i}`, entry({ o: i })]));
    await replaceCache(old, meta(3000, 1000));

    // A reader on a connection of its own, reading the hash and its facts at one instant, throughout.
    const reader = new Redis(process.env['REDIS_URL'] ?? 'redis://127.0.0.1:6379');
    const seen: { fields: string[]; syncedAt: string | null }[] = [];
    let writing = true;
    const reading = (async () => {
      while (writing) {
        const res = await reader
          .multi()
          .hkeys(store.keys.instances)
          .hget(store.keys.cacheMeta, 'syncedAt')
          .exec();
        const [[, fields], [, syncedAt]] = res as [[null, string[]], [null, string | null]];
        seen.push({ fields, syncedAt });
      }
    })();
    try {
      const snapshot = writer.snapshot(TOKEN);
      for (let i = 0; i < 3000; i++) {
        await snapshot.add(`pg-new-${i}`, entry({ n: i }));
        // Let the reader in between the chunks.
        if (i % 250 === 0) await new Promise((r) => setImmediate(r));
      }
      await snapshot.commit(meta(3000, 2000));
      // Read on until the reader has seen the new cache at least once.
      while (!seen.some((s) => s.syncedAt === '2000')) await new Promise((r) => setTimeout(r, 5));
    } finally {
      writing = false;
      await reading;
      reader.disconnect();
    }

    const shapes = new Set(
      seen.map(({ fields, syncedAt }) => {
        const kinds = new Set(fields.map((f) => f.replace(/-\d+$/, '')));
        return `${[...kinds].join('+')}×${fields.length}@${syncedAt}`;
      }),
    );
    expect([...shapes].sort()).toEqual(['pg-new×3000@2000', 'pg-old×3000@1000']);
  });

  it('keeps two snapshots written at once apart: each commit is one of them, whole', async () => {
    const a = writer.snapshot(TOKEN);
    const b = writer.snapshot(TOKEN);
    for (let i = 0; i < 1500; i++) {
      await a.add(`pg-a-${i}`, entry({ a: i }));
      await b.add(`pg-b-${i}`, entry({ b: i }));
    }
    expect(await snapshotKeys()).toHaveLength(2);

    await a.commit(meta(1500, 1));
    let fields = await redis.hkeys(store.keys.instances);
    expect(fields).toHaveLength(1500);
    expect(fields.every((f) => f.startsWith('pg-a-'))).toBe(true);

    await b.commit(meta(1500, 2));
    fields = await redis.hkeys(store.keys.instances);
    expect(fields).toHaveLength(1500);
    expect(fields.every((f) => f.startsWith('pg-b-'))).toBe(true);
    expect((await store.cacheMeta())?.syncedAt).toBe(2);
    expect(await snapshotKeys()).toEqual([]);
  });

  it('leaves the cache as it was when abandoned', async () => {
    await replaceCache({ 'pg-kept': entry({ k: 0 }) }, meta(1, 1000));
    const abandoned = writer.snapshot(TOKEN);
    for (let i = 0; i < 1200; i++) await abandoned.add(`pg-${i}`, entry({ [`p${i}`]: 0 }));
    expect(await snapshotKeys()).toHaveLength(1);
    await abandoned.abandon();
    expect(await snapshotKeys()).toEqual([]);
    expect(await redis.hkeys(store.keys.instances)).toEqual(['pg-kept']);
    expect((await store.cacheMeta())?.syncedAt).toBe(1000);
  });

  /** A snapshot of `count` entries whose key then expires, as its TTL does when its writer stalls. */
  async function expiredSnapshot(count: number) {
    await replaceCache({ 'pg-kept': entry({ k: 0 }) }, meta(1, 1000));
    const unfinished = writer.snapshot(TOKEN);
    for (let i = 0; i < count; i++) await unfinished.add(`pg-${i}`, entry({ [`p${i}`]: 0 }));
    const [key] = await snapshotKeys();
    const ttl = await redis.pttl(key!);
    expect(ttl).toBeGreaterThan(0);
    expect(ttl).toBeLessThanOrEqual(15 * 60_000);
    await redis.pexpire(key!, 1);
    while ((await redis.exists(key!)) === 1) await new Promise((r) => setTimeout(r, 5));
    return unfinished;
  }

  async function expectCacheKept() {
    expect(await redis.hkeys(store.keys.instances)).toEqual(['pg-kept']);
    expect((await store.cacheMeta())?.syncedAt).toBe(1000);
    expect(await snapshotKeys()).toEqual([]);
  }

  it('lets an unfinished snapshot expire by itself; its late commit fails and changes nothing', async () => {
    const unfinished = await expiredSnapshot(2000); // whole chunks: nothing left to send at the commit
    await expect(unfinished.commit(meta(2000, 2000))).rejects.toThrow(/expired/);
    await expectCacheKept();
  });

  // The commit first sends the entries still pending, whose HSET creates the expired key anew: the commit
  // must still see that the key lost what came before (here 1,000 of 1,200).
  it('refuses the late commit of an expired snapshot with entries still pending', async () => {
    const unfinished = await expiredSnapshot(1200);
    await expect(unfinished.commit(meta(1200, 2000))).rejects.toThrow(/expired/);
    await expectCacheKept();
  });

  it('empties the cache when committed with nothing (no pods left), and records the facts', async () => {
    await replaceCache({ 'pg-x': entry({ x: 0 }) }, meta(1, 1000));
    await writer.snapshot(TOKEN).commit(meta(0, 2000));
    expect(await redis.exists(store.keys.instances)).toBe(0);
    expect(await store.cachedInstances('pg-x')).toBeUndefined();
    expect(await store.cacheMeta()).toEqual({
      syncedAt: 2000,
      durationMs: 1,
      deployments: 0,
      statefulsets: 0,
      pods: 0,
    });
    expect(await snapshotKeys()).toEqual([]);
  });

  it('reads previous assignments per LRP in one call, an empty Map for one never cached', async () => {
    await replaceCache({
      'pg-1': entry({ 'p-a': 0, 'p-b': 1 }),
      'pg-2': entry({ 'p-c': 2 }),
    });
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
