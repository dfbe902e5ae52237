/**
 * The bench's report: each figure as a row beside its baseline, ratio and target, printed as a
 * Markdown-compatible table and written with the run's details to bench/results/latest.json.
 */
import { writeFile } from 'node:fs/promises';
import { cpus } from 'node:os';
import { join } from 'node:path';
import { REDIS_URL, elapsedSeconds, log } from './common.js';
import { WORKER_NODE_ARGS } from './service.js';

export interface Row {
  scenario: string;
  size: string;
  metric: string;
  ours: number;
  baseline: number;
  unit: string;
  /** ours / baseline, or baseline / ours where smaller is better ("× faster"). */
  ratio: number;
  ratioMeaning: string;
  target: string;
  met: boolean | undefined;
  note?: string;
}

export function fmt(v: number, unit: string): string {
  if (!Number.isFinite(v)) return 'n/a';
  if (unit === 'B') return v >= 1e6 ? `${(v / 1e6).toFixed(2)} MB` : `${(v / 1e3).toFixed(1)} kB`;
  if (unit === 'B/LRP') return `${Math.round(v)} B`;
  if (unit === 'ms') return v < 10 ? `${v.toFixed(2)} ms` : `${Math.round(v)} ms`;
  if (unit === '%') return `${v.toFixed(2)} %`;
  if (unit === '/h') return `${v < 10 ? v.toFixed(1) : Math.round(v)}/h`;
  return `${Math.round(v)} ${unit}`;
}

/** The rows as a Markdown-compatible table, in the order of `order` (scenario prefixes). */
export function table(rows: Row[], order: readonly string[]): string {
  const rank = (r: Row): number => order.findIndex((o) => r.scenario.startsWith(o));
  const sorted = [...rows].sort((a, b) => rank(a) - rank(b));
  const head = ['scenario', 'size', 'metric', 'ours', 'baseline', 'ratio', 'target', 'met'];
  const body = sorted.map((r) => [
    r.scenario,
    r.size,
    r.metric,
    fmt(r.ours, r.unit),
    fmt(r.baseline, r.unit),
    Number.isFinite(r.ratio) ? `${r.ratio.toFixed(r.ratio >= 10 ? 0 : 2)}${r.ratioMeaning}` : 'n/a',
    r.target,
    r.met === undefined ? '—' : r.met ? 'yes' : 'MISSED',
  ]);
  const widths = head.map((h, i) => Math.max(h.length, ...body.map((b) => (b[i] ?? '').length)));
  const line = (cells: string[]): string => cells.map((c, i) => c.padEnd(widths[i] ?? 0)).join(' | ');
  return [line(head), widths.map((w) => '-'.repeat(w)).join('-|-'), ...body.map(line)].join('\n');
}

/** The table's order: rows by the scenario their name starts with. */
const ORDER = [
  'GET /apps',
  'GET instances',
  'PUT /apps',
  'convergence',
  'drift',
  'routing',
  'queue',
  'memory: Redis',
  'memory: API',
  'memory: worker',
  'watch',
];

export interface Report {
  quick: boolean;
  /** The Redis key prefix of the run. */
  prefix: string;
  rows: Row[];
  /** The reads' memory figures, per workload kind and size. */
  memory: unknown[];
  /** The watch scenario's raw results. */
  watch: unknown[];
}

/** The table (and how many targets were missed) on stdout; everything in bench/results/latest.json. */
export async function writeReport(results: string, r: Report): Promise<void> {
  const { quick, prefix, rows, memory, watch } = r;
  const out = table(rows, ORDER);
  process.stdout.write(
    `\nOPI bench (${quick ? 'quick' : 'full'}; API as a child process; ${cpus().length} CPUs; ` +
      `autocannon; latencies at 1 connection)\n\n${out}\n\n`,
  );
  const missed = rows.filter((row) => row.met === false).length;
  if (missed) process.stdout.write(`${missed} target(s) MISSED\n`);
  await writeFile(
    join(results, 'latest.json'),
    `${JSON.stringify(
      {
        mode: quick ? 'quick' : 'full',
        at: new Date().toISOString(),
        durationMs: Math.round(elapsedSeconds() * 1000),
        node: process.version,
        cpus: cpus().length,
        api: 'child process: node apps/api/dist/main.js, LOG_LEVEL info, output to bench/results/api.log',
        worker: `child process: node ${[...WORKER_NODE_ARGS, 'apps/worker/dist/main.js'].join(' ')}`,
        simulator: 'in-process @opi/kube-sim without controllers, filled through its store',
        redis: { url: REDIS_URL, prefix },
        rows,
        memory,
        watch,
      },
      null,
      2,
    )}\n`,
  );
  log(`wrote bench/results/latest.json in ${elapsedSeconds().toFixed(1)} s`);
}
