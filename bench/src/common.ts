/**
 * What the bench's scenarios share: the service's processes (started as production starts them), the
 * figures' rows and their table, /proc readings and the progress log.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { closeSync, openSync, readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Redis } from 'ioredis';

export const repo = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
export const NAMESPACE = 'cf-workloads';
export const REDIS_DB = Number(process.env['BENCH_REDIS_DB'] ?? 9);
export const REDIS_URL = `redis://127.0.0.1:6379/${REDIS_DB}`;
export const apiScript = join(repo, 'apps/api/dist/main.js');
export const workerScript = join(repo, 'apps/worker/dist/main.js');

/**
 * The worker's Node flags: those it ships with (`npm run start:worker`, which k8s/ and the compose file
 * repeat; a test keeps them equal), so the worker is measured as it runs. BENCH_WORKER_NODE_OPTIONS
 * replaces them, e.g. `--max-old-space-size=128` or an empty string for V8's defaults.
 */
export const WORKER_NODE_ARGS = ((): string[] => {
  const override = process.env['BENCH_WORKER_NODE_OPTIONS'];
  if (override !== undefined) return override.split(/\s+/).filter(Boolean);
  const pkg = JSON.parse(readFileSync(join(repo, 'package.json'), 'utf8')) as {
    scripts: Record<string, string>;
  };
  return (pkg.scripts['start:worker'] ?? '').split(/\s+/).filter((a) => a.startsWith('--'));
})();

/** The service's environment on the bench's Redis database, under `prefix`. */
export const serviceEnv = (prefix: string, namespace: string = NAMESPACE): Record<string, string> => ({
  REDIS_URL,
  OPI_QUEUE_PREFIX: prefix,
  OPI_NAMESPACE: namespace,
  NODE_ENV: 'production',
  // The service's default (info: one line per request and per job) unless BENCH_LOG_LEVEL says otherwise.
  LOG_LEVEL: process.env['BENCH_LOG_LEVEL'] ?? 'info',
});

export const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

const benchStarted = performance.now();

/** Seconds since the bench started. */
export function elapsedSeconds(): number {
  return (performance.now() - benchStarted) / 1000;
}

/** A progress line, with the seconds since the start: where a slow run spends its time. */
export function log(msg: string): void {
  process.stderr.write(`[bench ${elapsedSeconds().toFixed(1)}s] ${msg}\n`);
}

export function percentile(values: number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  if (sorted.length === 0) return NaN;
  const i = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[i] ?? NaN;
}

// ---- rows and the table ----------------------------------------------------------------------------

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

// ---- processes -------------------------------------------------------------------------------------

export interface Child {
  proc: ChildProcess;
  port: number;
  pid: number;
  logFile: string;
}

/**
 * Starts a node process and waits for it to log `{"port": n}` as JSON or, when given, a line with `ready`
 * in it; its output goes to a file, not through us.
 */
export async function startChild(
  script: string,
  env: Record<string, string>,
  logFile: string,
  ready?: string,
  nodeArgs: string[] = [],
): Promise<Child> {
  const fd = openSync(logFile, 'w');
  // BENCH_PROFILE_DIR=dir: every service process writes a V8 CPU profile there when it exits, and a heap
  // snapshot when it nears its heap limit, which shows what filled it.
  const profile = process.env['BENCH_PROFILE_DIR'];
  const profiling = profile
    ? [
        '--cpu-prof',
        `--cpu-prof-dir=${profile}`,
        '--heapsnapshot-near-heap-limit=1',
        `--diagnostic-dir=${profile}`,
      ]
    : [];
  const args = [...nodeArgs, ...profiling, script];
  const proc = spawn(process.execPath, args, {
    env: { PATH: process.env['PATH'] ?? '', ...env },
    stdio: ['ignore', fd, fd],
  });
  closeSync(fd);
  const deadline = Date.now() + 20_000;
  while (Date.now() < deadline) {
    if (proc.exitCode !== null) throw new Error(`${script} exited with ${proc.exitCode}; see ${logFile}`);
    const text = readFileSync(logFile, 'utf8');
    let port = 0;
    for (const line of text.split('\n')) {
      if (!line.includes('"port"')) continue;
      try {
        const p = (JSON.parse(line) as { port?: unknown }).port;
        if (typeof p === 'number' && p > 0) port = p;
      } catch {
        // not a JSON line
      }
    }
    if (proc.pid !== undefined && (ready === undefined ? port > 0 : text.includes(ready))) {
      return { proc, port, pid: proc.pid, logFile };
    }
    await sleep(100);
  }
  proc.kill('SIGKILL');
  throw new Error(`${script} did not log its port; see ${logFile}`);
}

export async function stopChild(c: Child): Promise<void> {
  // Ended already (by a signal, exitCode stays null): its 'exit' has been emitted and will not come again.
  if (c.proc.exitCode !== null || c.proc.signalCode !== null) return;
  const exited = new Promise<void>((r) => {
    c.proc.once('exit', () => {
      r();
    });
  });
  c.proc.kill('SIGTERM');
  const timer = setTimeout(() => c.proc.kill('SIGKILL'), 5000);
  await exited;
  clearTimeout(timer);
}

/** Whether a child has ended. */
export function ended(c: Child): boolean {
  return c.proc.exitCode !== null || c.proc.signalCode !== null;
}

/** Why a child ended, from its log: V8's fatal error (out of heap), or its last line. */
export function deathOf(c: Child): string {
  let lines: string[] = [];
  try {
    lines = readFileSync(c.logFile, 'utf8').split('\n').filter(Boolean);
  } catch {
    // no log
  }
  const fatal = lines.find((l) => l.startsWith('FATAL ERROR'));
  const why = fatal ?? lines.at(-1)?.slice(0, 200) ?? String(c.proc.exitCode ?? c.proc.signalCode);
  return `process ${c.pid} died (${why}); its log: ${c.logFile}`;
}

/** CPU seconds a process has used (user + system), from /proc; NaN where there is none. */
export function cpuSeconds(pid: number): number {
  try {
    // The command name (field 2) may hold spaces: the fields counted from its closing parenthesis.
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    // utime and stime, fields 14 and 15, in clock ticks (100 per second on Linux).
    return (Number(fields[11]) + Number(fields[12])) / 100;
  } catch {
    return NaN;
  }
}

/** A process's resident memory; 0 once it is gone (its exit is noticed by the caller). */
export function rssBytes(pid: number): number {
  let status: string;
  try {
    status = readFileSync(`/proc/${pid}/status`, 'utf8');
  } catch {
    return 0;
  }
  const m = /VmRSS:\s+(\d+) kB/.exec(status);
  return m?.[1] ? Number(m[1]) * 1024 : NaN;
}

export async function deletePrefix(redis: Redis, prefix: string): Promise<number> {
  let cursor = '0';
  let n = 0;
  do {
    const [next, found] = await redis.scan(cursor, 'MATCH', `${prefix}:*`, 'COUNT', 1000);
    cursor = next;
    if (found.length) n += await redis.del(...found);
  } while (cursor !== '0');
  return n;
}

/** The JSON lines of a pino log file whose `msg` is `msg`. */
export function logLines(file: string, msg: string): Record<string, unknown>[] {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch {
    return [];
  }
  const out: Record<string, unknown>[] = [];
  for (const line of text.split('\n')) {
    if (!line.includes(msg)) continue;
    try {
      const o = JSON.parse(line) as Record<string, unknown>;
      if (o['msg'] === msg) out.push(o);
    } catch {
      // not a JSON line
    }
  }
  return out;
}
