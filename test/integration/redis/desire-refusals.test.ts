/**
 * The store's refusals against a real Redis: out of order and twice, an older generation never hides a
 * newer one's refusal or success, and /instances' read shows one only while the record has its generation.
 */
import { randomUUID } from 'node:crypto';
import { Redis } from 'ioredis';
import { StateStore } from '@opi/state';
import { sampleLrp } from '../../../libs/translation/src/lrp.fixture.js';
import { deletePrefix } from '../../support/redis-keys.js';

const prefix = `test-refusals-${randomUUID().slice(0, 8)}`;
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

const refusal = (generation: number, message = `refused at ${generation}`) => ({
  generation,
  reason: 'invalid',
  message,
});

async function desired() {
  const lrp = sampleLrp({ processGuid: `pg-${randomUUID()}` });
  const { generation } = await store.desire(lrp);
  return { lrp, pg: lrp.processGuid, generation };
}

describe('desire refusals', () => {
  it("shows the record's own refusal, and no more once a success of its generation cleared it", async () => {
    const { pg, generation } = await desired();
    expect(await store.recordRefusal(pg, refusal(generation))).toBe(true);
    expect((await store.lrpWithInstances(pg)).refusal).toEqual(refusal(generation));
    // Twice is the same.
    expect(await store.recordRefusal(pg, refusal(generation))).toBe(true);
    await store.clearRefusal(pg, generation);
    await store.clearRefusal(pg, generation);
    expect((await store.lrpWithInstances(pg)).refusal).toBeUndefined();
    expect(await redis.exists(store.keys.refusal(pg))).toBe(0);
  });

  it('hides a refusal once an update recorded a newer generation', async () => {
    const { lrp, pg, generation } = await desired();
    await store.recordRefusal(pg, refusal(generation));
    const updated = await store.update(pg, { instances: 2, annotation: lrp.annotation });
    expect(updated?.generation).toBeGreaterThan(generation);
    expect((await store.lrpWithInstances(pg)).refusal).toBeUndefined();
  });

  it('never lets an older refusal replace a newer one, nor an older success clear it', async () => {
    const { lrp, pg } = await desired();
    const newer = (await store.update(pg, { instances: 3, annotation: lrp.annotation }))?.generation ?? 0;
    await store.recordRefusal(pg, refusal(newer));
    // The converge of an older generation, finishing late either way.
    expect(await store.recordRefusal(pg, refusal(newer - 1))).toBe(false);
    await store.clearRefusal(pg, newer - 1);
    expect((await store.lrpWithInstances(pg)).refusal).toEqual(refusal(newer));
  });

  it('a newer refusal replaces an older one; a stop confirmed clears it', async () => {
    const { lrp, pg, generation } = await desired();
    await store.recordRefusal(pg, refusal(generation, 'old'));
    const newer = (await store.update(pg, { instances: 4, annotation: lrp.annotation }))?.generation ?? 0;
    expect(await store.recordRefusal(pg, refusal(newer, 'new'))).toBe(true);
    expect((await store.lrpWithInstances(pg)).refusal?.message).toBe('new');
    const { generation: stopped } = await store.stop(pg, lrp.guid, lrp.version);
    expect((await store.lrpWithInstances(pg)).refusal).toBeUndefined();
    await store.confirmStopped(pg, stopped);
    expect(await redis.exists(store.keys.refusal(pg))).toBe(0);
  });
});
