/**
 * `npm run bench [-- --quick] [--only=<scenario>]`: runs the scenarios against the API as its own process
 * on a spare Redis database and an in-process simulated cluster, and reports each figure beside a
 * baseline run side by side (a cache-less server, a bare handler, raw BullMQ, a bare watch).
 */
import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { StateStore } from '@opi/state';
import { WORKLOAD_KINDS } from '@opi/domain';
import { NAMESPACE, REDIS_URL, log, repo } from './common.js';
import { convergence } from './convergence.js';
import { drift } from './drift.js';
import { routingEmission } from './routing-emission.js';
import { routingLatency } from './routing-latency.js';
import { ingest } from './ingest.js';
import { quick, runs, watchOptions } from './options.js';
import { type Child, startChild, stopChild } from './processes.js';
import { queueOverhead } from './queue-overhead.js';
import { type MemoryRow, reads } from './reads.js';
import { type Row, writeReport } from './report.js';
import { deletePrefix, startApi, startSim, uniquePrefix } from './service.js';
import { watchCache } from './watch-cache.js';
import type { SizeResult } from './watch-report.js';

async function main(): Promise<void> {
  const prefix = uniquePrefix();
  const results = join(repo, 'bench/results');
  await mkdir(results, { recursive: true });
  const redis = new Redis(REDIS_URL);
  const state = new StateStore(redis, prefix);
  const sim = await startSim(NAMESPACE, 11);
  const children: Child[] = [];
  const rows: Row[] = [];
  const memory: MemoryRow[] = [];
  const watch: SizeResult[] = [];
  try {
    const api = await startApi(prefix, join(results, 'api.log'));
    children.push(api);
    const bare = await startChild(join(repo, 'bench/dist/bare-server.js'), {}, join(results, 'bare.log'));
    children.push(bare);
    const base = `http://127.0.0.1:${api.port}`;
    log(`API pid ${api.pid} on ${base} (child process, LOG_LEVEL info); bare Express on ${bare.port}`);
    if (runs('reads')) {
      const r = await reads({ results, prefix, sim, state, redis, api, children });
      rows.push(...r.rows);
      memory.push(...r.memory);
    }
    if (runs('ingest')) {
      log('desire ingest');
      rows.push(...(await ingest(api, bare)));
    }
    if (runs('queue')) {
      log('queue overhead');
      rows.push(...(await queueOverhead(prefix)));
    }
    if (runs('convergence')) {
      for (const kind of WORKLOAD_KINDS) {
        log(`convergence (${kind}s)`);
        rows.push(...(await convergence(results, kind)));
      }
    }
    if (runs('drift')) {
      log('drift → repaired (issue 24)');
      rows.push(...(await drift(results)));
    }
    if (runs('routing')) {
      log('routing: the route emitter against nats-server (issue 25)');
      rows.push(...(await routingEmission()));
      log('routing through gorouter (issue 25)');
      rows.push(...(await routingLatency(results)));
    }
    if (runs('watch')) {
      log('watch cache (issue 15)');
      const w = await watchCache(watchOptions, results);
      rows.push(...w.rows);
      watch.push(...w.details);
    }
    await writeReport(results, { quick, prefix, rows, memory, watch });
  } finally {
    for (const c of children) await stopChild(c);
    const n =
      (await deletePrefix(redis, prefix)) +
      (await deletePrefix(redis, `${prefix}-raw`)) +
      (await deletePrefix(redis, `${prefix}-q`));
    log(`deleted ${n} Redis keys under ${prefix}`);
    redis.disconnect();
    await sim.close();
  }
}

await main();
// Whatever a library left open (a kept-alive socket, a timer), the run is over.
process.exit(0);
