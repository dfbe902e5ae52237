/**
 * The records' shape, which the store's Lua scripts read instead of decoding JSON (cjson refuses what
 * JSON.stringify writes for lone surrogates: found by the fuzz tests as a 500 on a desire). Every record
 * starts with its state; a desired one ends with its generation.
 */
import { randomUUID } from 'node:crypto';
import { Redis } from 'ioredis';
import { StateStore } from '@opi/state';
import { sampleLrp } from '../../libs/translation/src/lrp.fixture.js';
import { deletePrefix } from '../support/redis-keys.js';

const prefix = `test-records-${randomUUID().slice(0, 8)}`;
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

// Lone surrogates, NUL and other control characters: JSON.stringify escapes them as \ud800, \u0000.
const hostile = 'a\ud800b\udfff\u0000\u0012"state":"desired",}';

describe('records with any text in them', () => {
  it('desire, re-desire, update, stop, re-desire and the sync’s scheduling entries all work', async () => {
    const lrp = sampleLrp({
      processGuid: `pg-${randomUUID()}`,
      appName: hostile,
      annotation: hostile,
      environment: { [hostile]: hostile, state: 'desired' },
    });
    const first = await store.desire(lrp);
    expect(first.changed).toBe(true);
    expect(await store.desire(lrp)).toEqual({ changed: false, generation: first.generation });

    const raw = (await redis.get(store.keys.lrp(lrp.processGuid))) ?? '';
    expect(raw.startsWith('{"state":"desired",')).toBe(true);
    expect(raw.endsWith(`,"generation":${first.generation}}`)).toBe(true);
    expect(await store.get(lrp.processGuid)).toEqual({ state: 'desired', lrp, generation: first.generation });

    const updated = await store.update(lrp.processGuid, { instances: 3, annotation: hostile });
    expect(updated?.generation).toBeGreaterThan(first.generation);
    const updatedRaw = (await redis.get(store.keys.lrp(lrp.processGuid))) ?? '';
    expect(updatedRaw.endsWith(`,"generation":${updated?.generation}}`)).toBe(true);

    await store.stop(lrp.processGuid, lrp.guid, lrp.version);
    const stoppedRaw = (await redis.get(store.keys.lrp(lrp.processGuid))) ?? '';
    expect(stoppedRaw.startsWith('{"state":"stopped",')).toBe(true);
    // The sync keeps a stopped LRP's entry while its workload exists; a desired one's is left alone.
    await store.showExisting(new Map([[lrp.processGuid, 'entry']]), []);
    expect(await redis.hget(store.keys.sched, lrp.processGuid)).toBe('entry');

    const again = await store.desire(lrp);
    expect(again.changed).toBe(true);
    await store.showExisting(new Map(), [lrp.processGuid]);
    expect(await redis.hget(store.keys.sched, lrp.processGuid)).not.toBeNull();
  });
});
