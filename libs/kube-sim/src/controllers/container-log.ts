/**
 * One run's log of a simulated container, as containerd keeps it: lines on stdout or stderr, each stamped
 * with the runtime's nanosecond time when written (strictly increasing within the run), readable whole,
 * followed as it grows (pods/log?follow), and, when the simulator has a pod log directory, appended to a
 * CRI log file the way the kubelet lays them out: `<dir>/<ns>_<pod>_<uid>/<container>/<restart>.log`,
 * lines `<RFC3339Nano> <stdout|stderr> <F|P> <text>`, rotated at a size.
 */
import { appendFileSync, existsSync, mkdirSync, readdirSync, renameSync, rmSync } from 'node:fs';
import { join } from 'node:path';

export type LogStreamName = 'stdout' | 'stderr';

export interface LogLine {
  timeNs: bigint;
  stream: LogStreamName;
  text: string;
}

export interface LogFollower {
  line(l: LogLine): void;
  /** The run ended (the container stopped): a follow ends here. */
  end(): void;
}

/** Where CRI log files go and how they rotate (the kubelet's containerLogMaxSize / MaxFiles). */
export interface CriLogSettings {
  dir: string;
  maxBytes: number;
  maxFiles: number;
}

/** The pod's directory under the log root, as the kubelet names it. */
export function podLogDir(root: string, namespace: string, name: string, uid: string): string {
  return join(root, `${namespace}_${name}_${uid}`);
}

// containerd splits a line longer than this into partial (P) records, the last one full (F).
const CRI_MAX_RECORD = 16 * 1024;
/** Lines kept in memory per run for pods/log; the CRI file keeps them all. */
const KEPT_LINES = 10_000;

/** RFC3339 with nanoseconds, as containerd writes it (`2026-12-07T16:40:00.123456789Z`). */
export function rfc3339Nano(ns: bigint): string {
  const ms = Number(ns / 1_000_000n);
  const frac = (ns % 1_000_000_000n).toString().padStart(9, '0');
  return `${new Date(ms).toISOString().slice(0, 19)}.${frac}Z`;
}

/** The kubelet's rotated-file suffix: `20261207-164000`. */
function rotationStamp(ms: number): string {
  return new Date(ms).toISOString().slice(0, 19).replace(/[-:]/g, '').replace('T', '-');
}

class CriLogFile {
  private size = 0;

  constructor(
    private readonly settings: CriLogSettings,
    private readonly path: string,
  ) {
    mkdirSync(join(path, '..'), { recursive: true });
  }

  append(l: LogLine): void {
    const stamp = `${rfc3339Nano(l.timeNs)} ${l.stream} `;
    const bytes = Buffer.from(l.text);
    let out = '';
    for (let at = 0; at < bytes.length || at === 0; at += CRI_MAX_RECORD) {
      const last = at + CRI_MAX_RECORD >= bytes.length;
      out += `${stamp}${last ? 'F' : 'P'} ${bytes.subarray(at, at + CRI_MAX_RECORD).toString()}\n`;
      if (last) break;
    }
    if (this.size > 0 && this.size + Buffer.byteLength(out) > this.settings.maxBytes) this.rotate(l.timeNs);
    appendFileSync(this.path, out);
    this.size += Buffer.byteLength(out);
  }

  private rotate(ns: bigint): void {
    let rotated = `${this.path}.${rotationStamp(Number(ns / 1_000_000n))}`;
    for (let n = 1; existsSync(rotated); n++)
      rotated = `${this.path}.${rotationStamp(Number(ns / 1_000_000n))}.${n}`;
    renameSync(this.path, rotated);
    this.size = 0;
    const dir = join(this.path, '..');
    const base = this.path.slice(dir.length + 1);
    const old = readdirSync(dir)
      .filter((f) => f.startsWith(`${base}.`))
      .sort();
    // maxFiles counts the live file too.
    for (const f of old.slice(0, Math.max(0, old.length - (this.settings.maxFiles - 1))))
      rmSync(join(dir, f));
  }
}

export class ContainerLog {
  readonly lines: LogLine[] = [];
  private readonly followers = new Set<LogFollower>();
  private readonly file: CriLogFile | undefined;
  private lastNs = 0n;
  ended = false;

  /** `file`: the run's CRI log file path, when the simulator writes them. */
  constructor(
    private readonly nowMs: () => number,
    cri?: { settings: CriLogSettings; path: string },
  ) {
    this.file = cri ? new CriLogFile(cri.settings, cri.path) : undefined;
  }

  /** Writes text on a stream: each of its lines is one record, stamped when written. */
  write(stream: LogStreamName, text: string): void {
    if (this.ended) return;
    for (const part of text.split('\n')) {
      // Milliseconds from the simulator's clock, the rest from the process clock; never twice the same.
      let ns = BigInt(this.nowMs()) * 1_000_000n + (process.hrtime.bigint() % 1_000_000n);
      if (ns <= this.lastNs) ns = this.lastNs + 1n;
      this.lastNs = ns;
      const l: LogLine = { timeNs: ns, stream, text: part };
      this.lines.push(l);
      if (this.lines.length > KEPT_LINES) this.lines.splice(0, this.lines.length - KEPT_LINES);
      this.file?.append(l);
      for (const f of this.followers) f.line(l);
    }
  }

  end(): void {
    if (this.ended) return;
    this.ended = true;
    for (const f of this.followers) f.end();
    this.followers.clear();
  }

  /** Calls back for every line written from now on; returns the way to stop. */
  follow(f: LogFollower): () => void {
    if (this.ended) {
      f.end();
      return () => undefined;
    }
    this.followers.add(f);
    return () => this.followers.delete(f);
  }
}

const RFC3339 = /^(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2})(?:\.(\d{1,9}))?(Z|[+-]\d{2}:\d{2})$/;

/** An RFC3339 time (as `sinceTime` carries it) in Unix nanoseconds, its fraction kept; undefined if bad. */
export function parseRfc3339Ns(s: string): bigint | undefined {
  const m = RFC3339.exec(s);
  if (!m) return undefined;
  const ms = Date.parse(`${m[1] ?? ''}${m[3] ?? ''}`);
  if (Number.isNaN(ms)) return undefined;
  return BigInt(ms) * 1_000_000n + BigInt((m[2] ?? '').padEnd(9, '0'));
}
