/**
 * The bench's child processes: started and stopped, their logs read, their CPU and memory read from
 * /proc, so that the service's processes and the baselines' are handled alike.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { closeSync, openSync, readFileSync } from 'node:fs';
import { sleep } from './common.js';

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

/**
 * Waits for processes started side by side (each loads client-node, seconds apiece on a busy machine);
 * throws the first failure once all have settled, so that `start` can note each one started for cleanup.
 */
export async function startSideBySide<T>(count: number, start: (i: number) => Promise<T>): Promise<T[]> {
  const settled = await Promise.allSettled(Array.from({ length: count }, (_, i) => start(i)));
  const failed = settled.find((r) => r.status === 'rejected');
  if (failed) throw failed.reason;
  return settled.flatMap((r) => (r.status === 'fulfilled' ? [r.value] : []));
}

export interface RssSampler {
  /** The peak since the start. */
  peak(pid: number): number;
  /** The peak since the previous phase ended (or the start); a new phase begins. */
  endPhase(pid: number): number;
  stop(): void;
}

/** Peak RSS per pid, sampled every `everyMs`, overall and per phase. */
export function rssSampler(pids: () => number[], everyMs = 200): RssSampler {
  const peaks = new Map<number, number>();
  const phase = new Map<number, number>();
  const sample = (): void => {
    for (const pid of pids()) {
      const rss = rssBytes(pid);
      peaks.set(pid, Math.max(peaks.get(pid) ?? 0, rss));
      phase.set(pid, Math.max(phase.get(pid) ?? 0, rss));
    }
  };
  sample();
  const timer = setInterval(sample, everyMs);
  return {
    peak: (pid) => {
      sample();
      return peaks.get(pid) ?? NaN;
    },
    endPhase: (pid) => {
      sample();
      const p = phase.get(pid) ?? NaN;
      phase.delete(pid);
      return p;
    },
    stop: () => {
      clearInterval(timer);
    },
  };
}
