/**
 * The ingest scenario: desires (PUT /apps/:process_guid) at 64 connections against a bare Express
 * handler that only parses the body, in alternating rounds.
 */
import { randomBytes } from 'node:crypto';
import type autocannon from 'autocannon';
import { uuid } from '@opi/contract/testing';
import { median } from './common.js';
import { type Load, load, newDesires } from './load.js';
import { plan } from './options.js';
import { type Child, cpuSeconds } from './processes.js';
import type { Row } from './report.js';

/**
 * Desires at 64 connections, against the bare handler. The two alternate in three rounds and the median
 * of the rounds' ratios is taken, so a neighbour's load that comes and goes hits both sides alike.
 */
export async function ingest(ours: Child, bare: Child): Promise<Row[]> {
  let counter = 0;
  const salt = randomBytes(3).toString('hex');
  const rounds = 3;
  const opts = (url: string): autocannon.Options => ({
    url,
    connections: 64,
    duration: Math.max(1, Math.round(plan.ingestSeconds / rounds)),
    headers: { 'content-type': 'application/json' },
    requests: newDesires(() => uuid(counter++, `c${salt}`)),
  });
  // How busy each server was while loaded, in cores: near 1 means bound by its own CPU (one thread).
  const busy = async (c: Child): Promise<Load & { cores: number }> => {
    const cpu0 = cpuSeconds(c.pid);
    const t0 = performance.now();
    const l = await load(opts(`http://127.0.0.1:${c.port}`));
    return { ...l, cores: (cpuSeconds(c.pid) - cpu0) / ((performance.now() - t0) / 1000) };
  };
  const results: { b: Load & { cores: number }; o: Load & { cores: number } }[] = [];
  for (let i = 0; i < rounds; i++) {
    const b = await busy(bare);
    const o = await busy(ours);
    results.push({ b, o });
  }
  const ratio = median(results.map((r) => r.o.rps / r.b.rps));
  const total = results.reduce((n, r) => n + r.o.total, 0);
  const bad = results.reduce((n, r) => n + r.o.bad, 0);
  const row: Row = {
    scenario: 'PUT /apps/:process_guid (desire ingest, 64 conns)',
    size: `${total} new LRPs`,
    metric: 'req/s',
    ours: median(results.map((r) => r.o.rps)),
    baseline: median(results.map((r) => r.b.rps)),
    unit: 'req/s',
    ratio,
    ratioMeaning: '× the bare rate',
    target: '≥ 0.5× bare',
    met: ratio >= 0.5 && bad === 0,
    note:
      `median of ${rounds} alternating rounds; p50 ${median(results.map((r) => r.o.p50)).toFixed(1)} ms vs ` +
      `${median(results.map((r) => r.b.p50)).toFixed(1)} ms; CPU ${median(results.map((r) => r.o.cores)).toFixed(2)} ` +
      `vs ${median(results.map((r) => r.b.cores)).toFixed(2)} cores; ` +
      `CPU per request ${Math.round(median(results.map((r) => (r.o.cores / r.o.rps) * 1e6)))} µs vs ` +
      `${Math.round(median(results.map((r) => (r.b.cores / r.b.rps) * 1e6)))} µs; non-2xx/errors: ours ${bad}`,
  };
  return [row];
}
