/**
 * The cache writer (the one Lease holder watching the cluster) under cut watches, a compaction storm, a
 * SIGKILL and a SIGSTOP past its Lease: after each, no LRP lost, no report twice, no stale write, and fresh
 * /instances within 30 s (`-t 'the cache writer'` runs these alone).
 */
import { eventually } from '../support/eventually.js';
import { sumOf } from '../support/prometheus-text.js';
import { CacheChaos } from './cache-chaos.js';
import { CACHE_FAULT_MS } from './config.js';
import { request, sleep } from './http.js';
import { alive, freeze, kill, logTail } from './processes.js';

describe('chaos: the cache writer', () => {
  const c = new CacheChaos();
  beforeAll(() => c.start(), 180_000);
  afterAll(() => c.close(), 60_000);

  it(
    'watches cut again and again',
    () =>
      c.phase('watches cut', async () => {
        let cut = 0;
        for (const end = Date.now() + CACHE_FAULT_MS; Date.now() < end;) {
          const r = await request(c.sim.httpUrl, 'POST', '/sim/watches/cut', undefined, c.sim.token);
          cut += (JSON.parse(r.text) as { cut: number }).cut;
          await sleep(1000);
        }
        c.say(`watches cut: ${cut}`);
        expect(cut).toBeGreaterThan(0);
      }),
    180_000,
  );

  it('a compaction storm: every re-watch meets 410 and relists', async () => {
    const { sp } = await c.holder();
    const expired = async () =>
      sumOf((await c.metrics(sp)) ?? new Map<string, number>(), 'opi_watch_relists_total', [
        'reason="expired"',
      ]);
    const before = await expired();
    await c.phase('compaction storm', async () => {
      for (const end = Date.now() + CACHE_FAULT_MS; Date.now() < end;) {
        await request(c.sim.httpUrl, 'POST', '/sim/compact', undefined, c.sim.token);
        await request(c.sim.httpUrl, 'POST', '/sim/watches/cut', undefined, c.sim.token);
        await sleep(1500);
      }
    });
    const relists = (await expired()) - before;
    c.say(`compaction storm: ${relists} relists after 410`);
    expect(relists).toBeGreaterThan(0);
  }, 180_000);

  it('the Lease holder SIGKILLed', async () => {
    const before = await c.holder();
    await c.phase('holder SIGKILLed', async () => {
      await sleep(2000);
      await kill(before.sp);
      c.say(`SIGKILL ${before.sp.name}, the holder (term ${before.token})`);
      // A pod deleted while nobody holds the Lease: its replacement shows once another worker took over.
      const probe = c.expectFresh('right after the SIGKILL');
      await sleep(1000);
      await c.addWorker();
      await probe;
    });
    const after = await c.holder();
    expect(after.token).toBeGreaterThan(before.token);
    expect(after.sp).not.toBe(before.sp);
  }, 180_000);

  it('the next holder SIGSTOPped past its Lease, then resumed', async () => {
    const paused = await c.holder();
    let next: { identity: string; token: number } | undefined;
    await c.phase('holder paused', async () => {
      await sleep(2000);
      freeze(paused.sp, true);
      c.say(`SIGSTOP ${paused.sp.name}, the holder (term ${paused.token})`);
      try {
        // The others take the Lease after its duration, list and write; meanwhile the load goes on, so
        // what the frozen one holds in memory goes stale.
        next = await c.holder(paused.identity);
        await sleep(3000);
      } finally {
        freeze(paused.sp, false);
      }
      c.say(`SIGCONT ${paused.sp.name}; ${next ? `the Lease is in term ${next.token}` : ''}`);
      // Whatever it still had to write is refused: the watch status and the fence stay the new holder's.
      for (const end = Date.now() + 4000; Date.now() < end;) {
        await c.expectHoldersWrites();
        await sleep(200);
      }
    });
    const refused = logTail(paused.sp, 1000)
      .split('\n')
      .filter((l) => l.includes('refused: a newer leader wrote')).length;
    c.say(`the resumed worker's writes refused by the fence: ${refused}`);
    expect(next!.token).toBeGreaterThan(paused.token);
    expect((await c.holder()).sp).not.toBe(paused.sp);
    // It stepped down, and lives on as a worker.
    await eventually(
      async () => (await c.metrics(paused.sp))?.get('opi_cache_writer') === 0,
      'the resumed worker to step down',
    );
    expect(alive(paused.sp)).toBe(true);
    await c.expectTasksReported();
  }, 180_000);
});
