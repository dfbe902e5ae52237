/**
 * The records' shape, which the store's Lua scripts read instead of decoding JSON (cjson refuses what
 * JSON.stringify writes for lone surrogates: found by the fuzz tests as a 500 on a desire). Every record
 * starts with its state; a desired one ends with its generation.
 */
import { randomUUID } from 'node:crypto';
import { Redis } from 'ioredis';
import { StateStore } from '@opi/state';
import { sampleLrp } from '../../../libs/translation/src/lrp.fixture.js';
import { deletePrefix } from '../../support/redis-keys.js';

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
    // The sync reads the generation in Redis, from the record's text.
    const summaries = [];
    for await (const chunk of store.recordSummaries()) summaries.push(...chunk);
    expect(summaries).toEqual([
      { state: 'desired', generation: first.generation, processGuid: lrp.processGuid },
    ]);

    const updated = await store.update(lrp.processGuid, { instances: 3, annotation: hostile });
    expect(updated?.generation).toBeGreaterThan(first.generation);
    const updatedRaw = (await redis.get(store.keys.lrp(lrp.processGuid))) ?? '';
    expect(updatedRaw.endsWith(`,"generation":${updated?.generation}}`)).toBe(true);

    await store.stop(lrp.processGuid, lrp.guid, lrp.version);
    const stoppedRaw = (await redis.get(store.keys.lrp(lrp.processGuid))) ?? '';
    expect(stoppedRaw.startsWith('{"state":"stopped",')).toBe(true);
    // The sync keeps a stopped LRP's entry while its workload exists; a desired one's is left alone.
    await store.listStoppedWhilePresent(new Map([[lrp.processGuid, 'entry']]), []);
    expect(await redis.hget(store.keys.schedulingInfos, lrp.processGuid)).toBe('entry');

    const again = await store.desire(lrp);
    expect(again.changed).toBe(true);
    await store.listStoppedWhilePresent(new Map(), [lrp.processGuid]);
    expect(await redis.hget(store.keys.schedulingInfos, lrp.processGuid)).not.toBeNull();
  });
});

describe('recordSummaries', () => {
  it('reads every record once, a chunk at a time, and drops members whose record expired', async () => {
    const own = new StateStore(redis, `${prefix}-scan`);
    const guids = Array.from({ length: 2500 }, (_, i) => `pg-scan-${i}`);
    for (const pg of guids) await own.desire(sampleLrp({ processGuid: pg }));
    await own.stop('pg-scan-7', 'g', 'v');
    await redis.del(own.keys.lrp('pg-scan-8'));

    const seen: string[] = [];
    let chunks = 0;
    for await (const chunk of own.recordSummaries(1000)) {
      chunks++;
      expect(chunk.length).toBeLessThanOrEqual(1500); // SSCAN's COUNT is a hint
      seen.push(...chunk.map((r) => r.processGuid));
    }
    expect(chunks).toBeGreaterThanOrEqual(2);
    expect(seen.sort()).toEqual(guids.filter((g) => g !== 'pg-scan-8').sort());
    expect(await redis.sismember(own.keys.lrps, 'pg-scan-8')).toBe(0);
    const states: string[] = [];
    for await (const chunk of own.recordSummaries()) {
      for (const r of chunk) if (r.state === 'stopped') states.push(`${r.processGuid} ${r.annotation}`);
    }
    expect(states).toEqual([`pg-scan-7 ${sampleLrp().annotation}`]);
    await deletePrefix(redis, `${prefix}-scan`);
  });
});
