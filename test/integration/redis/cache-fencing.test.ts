/**
 * The fenced cache writer on a real Redis: a leader's writes carry its fencing token, and once a newer
 * leader (a higher token) has written, the older one's puts, deletes, snapshot commits and meta writes are
 * refused and change nothing. After Redis lost its data, every write is refused until a new claim.
 */
import { randomUUID } from 'node:crypto';
import { type Cluster, Redis } from 'ioredis';
import { CacheEpochError, CacheWriter, FencedOffError, StateStore } from '@opi/state';
import { deletePrefix } from '../../support/redis-keys.js';
import { type RedisTopology, redisToolsInstalled, startRedisCluster } from '../../support/redis-cluster.js';

const prefix = `test-fence-${randomUUID().slice(0, 8)}`;
let redis: Redis;
let store: StateStore;

beforeAll(() => {
  redis = new Redis(process.env['REDIS_URL'] ?? 'redis://127.0.0.1:6379');
  store = new StateStore(redis, prefix);
});
afterEach(async () => {
  await deletePrefix(redis, prefix);
});
afterAll(() => {
  redis.disconnect();
});

/** Everything the cache writer may touch, to show a refused write changed nothing. */
async function cacheState(r: Redis | Cluster = redis, p = prefix) {
  const w = new CacheWriter(r, p);
  const snapshots = await r.keys(w.keys.instancesNext('*'));
  return {
    instances: await r.hgetall(w.keys.instances),
    meta: await r.hgetall(w.keys.cacheMeta),
    watch: await r.hgetall(w.keys.watchStatus),
    fence: await r.get(w.keys.cacheFence),
    epoch: await r.get(w.keys.cacheEpoch),
    snapshots,
  };
}

describe('CacheWriter', () => {
  it('claims the cache: raises the fence, sets a fresh epoch; a second writer of the term shares it', async () => {
    const a = new CacheWriter(redis, prefix);
    expect(await a.epochPresent()).toBe(false);
    const claimed = await a.claim(0);
    expect(claimed.fresh).toBe(true);
    expect(await a.fence()).toBe(0);
    expect(await redis.get(a.keys.cacheEpoch)).toBe(claimed.epoch);
    expect(await a.epochPresent()).toBe(true);

    const again = new CacheWriter(redis, prefix);
    expect(await again.claim(0)).toEqual({ epoch: claimed.epoch, fresh: false });
    await again.putInstances(0, [['pg-1', 'x']]);
    await a.putInstances(0, [['pg-2', 'y']]);
    expect(await redis.hgetall(a.keys.instances)).toEqual({ 'pg-1': 'x', 'pg-2': 'y' });
  });

  it('writes instances, meta and watch status as the readers expect them', async () => {
    const w = new CacheWriter(redis, prefix);
    await w.claim(3);
    const entries: [string, string][] = Array.from({ length: 1200 }, (_, i) => [`pg-${i}`, `{"i":${i}}`]);
    await w.putInstances(3, entries);
    expect(await redis.hlen(w.keys.instances)).toBe(1200);
    await w.deleteInstances(
      3,
      entries.slice(0, 700).map(([pg]) => pg),
    );
    expect(await redis.hlen(w.keys.instances)).toBe(500);
    expect(await redis.hget(w.keys.instances, 'pg-1199')).toBe('{"i":1199}');
    await w.putInstances(3, []);
    await w.deleteInstances(3, []);

    await w.writeMeta(3, { syncedAt: '1700000000000', durationMs: '5', deployments: '2', pods: '3' });
    expect(await store.cacheMeta()).toEqual({
      syncedAt: 1700000000000,
      durationMs: 5,
      deployments: 2,
      statefulsets: 0,
      pods: 3,
    });
    await w.writeWatchStatus(3, { 'pods.rv': '42', 'pods.lastEventAt': '1700000000001' });
    expect(await redis.hgetall(w.keys.watchStatus)).toEqual({
      'pods.rv': '42',
      'pods.lastEventAt': '1700000000001',
    });
    expect(await w.fence()).toBe(3);
  });

  it('lets a higher token win: every write of the lower one is refused and changes nothing', async () => {
    const old = new CacheWriter(redis, prefix);
    const next = new CacheWriter(redis, prefix);
    await old.claim(1);
    await old.putInstances(1, [
      ['pg-a', 'old-a'],
      ['pg-b', 'old-b'],
    ]);
    await old.writeMeta(1, { syncedAt: '1' });
    await old.writeWatchStatus(1, { 'pods.rv': '1' });

    expect((await next.claim(2)).fresh).toBe(true);
    await next.putInstances(2, [['pg-a', 'new-a']]);
    await next.writeMeta(2, { syncedAt: '2' });
    const before = await cacheState();
    expect(before.fence).toBe('2');

    await expect(old.putInstances(1, [['pg-a', 'stale']])).rejects.toBeInstanceOf(FencedOffError);
    await expect(old.deleteInstances(1, ['pg-b'])).rejects.toBeInstanceOf(FencedOffError);
    await expect(old.writeMeta(1, { syncedAt: '3' })).rejects.toBeInstanceOf(FencedOffError);
    await expect(old.writeWatchStatus(1, { 'pods.rv': '9' })).rejects.toBeInstanceOf(FencedOffError);
    const snapshot = old.snapshot(1);
    await snapshot.add('pg-z', 'stale');
    await expect(snapshot.commit({ syncedAt: '4' })).rejects.toBeInstanceOf(FencedOffError);
    const empty = old.snapshot(1);
    await expect(empty.commit()).rejects.toBeInstanceOf(FencedOffError);
    // Claiming again does not help the old leader, and says why.
    const err = await old.claim(1).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(FencedOffError);
    expect(err).toMatchObject({ token: 1, fence: 2 });

    expect(await cacheState()).toEqual(before);
    expect(await redis.hget(next.keys.instances, 'pg-a')).toBe('new-a');
    expect(await redis.hget(next.keys.instances, 'pg-b')).toBe('old-b');
  });

  it('accepts an equal token, and a higher token from the claimed writer raises the fence', async () => {
    const w = new CacheWriter(redis, prefix);
    await w.claim(4);
    for (let i = 0; i < 3; i++) await w.putInstances(4, [[`pg-${i}`, 'v']]);
    expect(await w.fence()).toBe(4);
    await w.writeMeta(6, { syncedAt: '6' });
    expect(await w.fence()).toBe(6);
    await expect(w.putInstances(5, [['pg-x', 'v']])).rejects.toBeInstanceOf(FencedOffError);
    expect(await redis.hexists(w.keys.instances, 'pg-x')).toBe(0);
  });

  it('swaps in a snapshot whole, with meta, and empties the cache with an empty one', async () => {
    const w = new CacheWriter(redis, prefix);
    await w.claim(1);
    await w.putInstances(1, [['pg-gone', 'v']]);
    const snapshot = w.snapshot(1);
    for (let i = 0; i < 2500; i++) await snapshot.add(`pg-${i}`, `e${i}`);
    expect(snapshot.size).toBe(2500);
    // Written in chunks into a key of its own that expires unless committed; readers see the old cache.
    const [next] = await redis.keys(w.keys.instancesNext('*'));
    expect(await redis.pttl(next!)).toBeGreaterThan(0);
    expect(await redis.hkeys(w.keys.instances)).toEqual(['pg-gone']);
    await snapshot.commit({ syncedAt: '10', durationMs: '1', deployments: '2500', pods: '2500' });
    expect(await redis.hlen(w.keys.instances)).toBe(2500);
    expect(await redis.hexists(w.keys.instances, 'pg-gone')).toBe(0);
    expect(await redis.pttl(w.keys.instances)).toBe(-1);
    expect((await store.cacheMeta())?.pods).toBe(2500);
    expect(await redis.keys(w.keys.instancesNext('*'))).toEqual([]);

    await w.snapshot(1).commit({ syncedAt: '11' });
    expect(await redis.exists(w.keys.instances)).toBe(0);
    expect((await store.cacheMeta())?.syncedAt).toBe(11);
  });

  it('refuses an old leader’s snapshot committed after the new leader’s, written at the same time', async () => {
    const old = new CacheWriter(redis, prefix);
    const next = new CacheWriter(redis, prefix);
    await old.claim(7);
    const a = old.snapshot(7);
    const b = next.snapshot(8);
    await next.claim(8);
    for (let i = 0; i < 1500; i++) {
      await a.add(`pg-old-${i}`, 'old');
      await b.add(`pg-new-${i}`, 'new');
    }
    await b.commit({ syncedAt: '8' });
    await expect(a.commit({ syncedAt: '7' })).rejects.toBeInstanceOf(FencedOffError);
    const fields = await redis.hkeys(next.keys.instances);
    expect(fields).toHaveLength(1500);
    expect(fields.every((f) => f.startsWith('pg-new-'))).toBe(true);
    expect(await redis.hget(next.keys.cacheMeta, 'syncedAt')).toBe('8');
    // The refused snapshot was dropped, not left to expire.
    expect(await redis.keys(next.keys.instancesNext('*'))).toEqual([]);

    // Both commit at once: the older token is refused, the cache is the newer one's.
    const c = old.snapshot(7);
    const d = next.snapshot(8);
    await c.add('pg-c', 'old');
    await d.add('pg-d', 'new');
    const results = await Promise.allSettled([c.commit(), d.commit()]);
    expect(results.map((r) => r.status)).toEqual(['rejected', 'fulfilled']);
    expect(await redis.hgetall(next.keys.instances)).toEqual({ 'pg-d': 'new' });
  });

  it('detects that Redis lost its data, refuses writes until claimed again, and then refuses the old leader', async () => {
    const old = new CacheWriter(redis, prefix);
    const w = new CacheWriter(redis, prefix);
    await old.claim(1);
    const first = await w.claim(2);
    await w.putInstances(2, [['pg-1', 'v']]);
    expect(await w.epochPresent()).toBe(true);

    await deletePrefix(redis, prefix); // what FLUSHALL or a restart without persistence does to our keys
    expect(await w.epochPresent()).toBe(false);
    for (const write of [
      () => w.putInstances(2, [['pg-2', 'partial']]),
      () => w.deleteInstances(2, ['pg-1']),
      () => w.writeMeta(2, { syncedAt: '5' }),
      () => w.writeWatchStatus(2, { 'pods.rv': '5' }),
      () => w.snapshot(2).commit({ syncedAt: '5' }),
      // The old leader, fence and epoch gone, is refused as well.
      () => old.putInstances(1, [['pg-3', 'stale']]),
    ]) {
      await expect(write()).rejects.toBeInstanceOf(CacheEpochError);
    }
    expect(await cacheState()).toEqual({
      instances: {},
      meta: {},
      watch: {},
      fence: null,
      epoch: null,
      snapshots: [],
    });

    const again = await w.claim(2);
    expect(again.fresh).toBe(true);
    expect(again.epoch).not.toBe(first.epoch);
    const snapshot = w.snapshot(2);
    await snapshot.add('pg-1', 'rebuilt');
    await snapshot.commit({ syncedAt: '6' });
    expect(await redis.hgetall(w.keys.instances)).toEqual({ 'pg-1': 'rebuilt' });
    await expect(old.claim(1)).rejects.toBeInstanceOf(FencedOffError);
    await expect(old.putInstances(1, [['pg-1', 'stale']])).rejects.toBeInstanceOf(FencedOffError);
    expect(await redis.hget(w.keys.instances, 'pg-1')).toBe('rebuilt');
  });

  it('refuses bad tokens and writes before a claim', async () => {
    const w = new CacheWriter(redis, prefix);
    await expect(w.putInstances(1, [['pg', 'v']])).rejects.toThrow(/claim/);
    await expect(w.claim(-1)).rejects.toBeInstanceOf(RangeError);
    await expect(w.claim(1.5)).rejects.toBeInstanceOf(RangeError);
    expect(() => w.snapshot(Number.NaN)).toThrow(RangeError);
    expect(await cacheState()).toMatchObject({ fence: null, epoch: null });
  });
});

const haveRedisTools = await redisToolsInstalled();
const describeWithCluster = haveRedisTools ? describe : describe.skip;

describeWithCluster('CacheWriter on a Redis Cluster', () => {
  let cluster: RedisTopology;
  let client: Cluster;
  const tagged = '{opi-fence}';

  beforeAll(async () => {
    cluster = await startRedisCluster();
    client = new Redis.Cluster(cluster.nodes);
  }, 60_000);
  afterAll(async () => {
    client.disconnect();
    await cluster.close();
  });

  it('runs every fenced script on one slot', async () => {
    const old = new CacheWriter(client, tagged);
    const w = new CacheWriter(client, tagged);
    await old.claim(1);
    await w.claim(2);
    await w.putInstances(2, [
      ['pg-1', 'a'],
      ['pg-2', 'b'],
    ]);
    await w.deleteInstances(2, ['pg-2']);
    await w.writeMeta(2, { syncedAt: '1' });
    await w.writeWatchStatus(2, { 'pods.rv': '1' });
    const snapshot = w.snapshot(2);
    await snapshot.add('pg-3', 'c');
    await snapshot.commit({ syncedAt: '2' });
    await expect(old.putInstances(1, [['pg-1', 'stale']])).rejects.toBeInstanceOf(FencedOffError);
    expect(await cacheState(client, tagged)).toMatchObject({
      instances: { 'pg-3': 'c' },
      meta: { syncedAt: '2' },
      watch: { 'pods.rv': '1' },
      fence: '2',
    });
    expect(await w.epochPresent()).toBe(true);
  });

  it('fails without the hash tag (CROSSSLOT): the check above means something', async () => {
    const w = new CacheWriter(client, 'opi-untagged-fence');
    await expect(w.claim(1)).rejects.toThrow(/CROSSSLOT/);
  });
});
