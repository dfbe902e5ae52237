/**
 * Tails every container's CRI log files under the kubelet's pod log root
 * (`<root>/<namespace>_<pod>_<uid>/<container>/<restart>.log`, rotated to `<restart>.log.<stamp>`), as
 * fluentd's tail input does: files are known by inode, so a rotated file is read to its end under its
 * new name before its successor, and a position saved by inode resumes a restarted agent exactly where
 * it stopped (a kill between two saves repeats at most what was read since the last one). Polling, not
 * inotify: it works on every filesystem a node mounts, and a poll of a node's ~200 containers is cheap.
 */
import { open, readdir, rename, stat, writeFile, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { CriJoiner, type LogRecord, parseCriRecord } from './cri.js';

/** Whose log a file is, from its path. */
export interface ContainerLogFile {
  namespace: string;
  pod: string;
  podUid: string;
  container: string;
  restart: number;
}

export interface TailerOptions {
  /** The kubelet's pod log root: `/var/log/pods`. */
  root: string;
  /** Where positions are kept across restarts (a node-local file); none: start at each file's end. */
  positionsFile?: string;
  pollMs?: number;
  saveEveryMs?: number;
  /**
   * Where files found at the first start with no saved position begin: `end` (the default) skips what
   * was written before the agent ever ran, `head` reads it all. Files that appear later are read whole.
   */
  firstStart?: 'end' | 'head';
  onLine(file: ContainerLogFile, line: LogRecord): void;
  /** A line that is not a CRI record (left out). */
  onBadLine?(file: ContainerLogFile): void;
  onError?(error: unknown): void;
  /** A pod's log directory is gone (the kubelet removed it): nothing more will come from it. */
  onPodGone?(podUid: string): void;
}

interface Tracked {
  path: string;
  file: ContainerLogFile;
  offset: number;
  joiner: CriJoiner;
}

const LOG_FILE = /^(\d+)\.log(\.\d{8}-\d{6}(\.\d+)?)?$/;
const CHUNK = 256 * 1024;

/** `<namespace>_<pod>_<uid>`: neither part can hold `_` (DNS names and a UUID). */
export function parsePodDir(name: string): { namespace: string; pod: string; podUid: string } | undefined {
  const parts = name.split('_');
  if (parts.length !== 3 || parts.some((p) => p === '')) return undefined;
  const [namespace = '', pod = '', podUid = ''] = parts;
  return { namespace, pod, podUid };
}

export class LogTailer {
  private readonly tracked = new Map<string, Tracked>();
  private saved = new Map<string, number>();
  private firstPoll = true;
  private timer: NodeJS.Timeout | undefined;
  private polling: Promise<void> | undefined;
  private lastSave = 0;
  private stopped = false;
  private readonly opts: Required<Pick<TailerOptions, 'pollMs' | 'saveEveryMs' | 'firstStart'>> &
    TailerOptions;

  constructor(options: TailerOptions) {
    this.opts = { pollMs: 250, saveEveryMs: 1000, firstStart: 'end', ...options };
  }

  /** Files being followed now. */
  get files(): number {
    return this.tracked.size;
  }

  async start(): Promise<void> {
    await this.loadPositions();
    await this.pollOnce();
    this.schedule();
  }

  /** Reads what is there once more, saves the positions, and stops. */
  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    await this.polling;
    await this.pollOnce();
    await this.savePositions();
  }

  /** One pass over every file (tests and stop call it directly). */
  pollOnce(): Promise<void> {
    const run = (this.polling ?? Promise.resolve()).then(() => this.poll());
    this.polling = run.catch(() => undefined);
    return run;
  }

  private schedule(): void {
    if (this.stopped) return;
    this.timer = setTimeout(() => {
      this.pollOnce()
        .catch((e: unknown) => this.opts.onError?.(e))
        .finally(() => {
          this.schedule();
        });
    }, this.opts.pollMs);
    this.timer.unref();
  }

  private async poll(): Promise<void> {
    const seen = new Set<string>();
    for (const podDir of await entries(this.opts.root)) {
      const pod = parsePodDir(podDir);
      if (!pod) continue;
      for (const container of await entries(join(this.opts.root, podDir))) {
        const dir = join(this.opts.root, podDir, container);
        // Oldest first: by restart, a run's rotated files (by their stamps) before its live one.
        const files = (await entries(dir))
          .map((name) => ({ name, m: LOG_FILE.exec(name) }))
          .filter((f) => f.m !== null)
          .map((f) => ({ name: f.name, restart: Number(f.m?.[1]), rotated: f.m?.[2] !== undefined }))
          .sort(
            (a, b) => a.restart - b.restart || Number(b.rotated) - Number(a.rotated) || cmp(a.name, b.name),
          );
        for (const f of files) {
          const path = join(dir, f.name);
          const st = await stat(path).catch(() => undefined);
          if (!st) continue;
          const key = `${st.dev}:${st.ino}`;
          seen.add(key);
          let t = this.tracked.get(key);
          if (!t) {
            const savedAt = this.saved.get(key);
            const start =
              savedAt !== undefined && savedAt <= st.size
                ? savedAt
                : this.firstPoll && (this.opts.firstStart === 'end' || f.rotated)
                  ? st.size
                  : 0;
            t = {
              path,
              file: { ...pod, container, restart: f.restart },
              offset: start,
              joiner: new CriJoiner(),
            };
            this.tracked.set(key, t);
          }
          t.path = path;
          if (st.size < t.offset) t.offset = 0; // truncated in place (copytruncate): read it again
          if (st.size > t.offset) await this.read(t, st.size);
        }
      }
    }
    const podsBefore = new Set([...this.tracked.values()].map((t) => t.file.podUid));
    for (const key of this.tracked.keys()) if (!seen.has(key)) this.tracked.delete(key);
    const podsNow = new Set([...this.tracked.values()].map((t) => t.file.podUid));
    for (const uid of podsBefore) if (!podsNow.has(uid)) this.opts.onPodGone?.(uid);
    this.firstPoll = false;
    this.saved.clear();
    if (Date.now() - this.lastSave >= this.opts.saveEveryMs) await this.savePositions();
  }

  private async read(t: Tracked, size: number): Promise<void> {
    const fh = await open(t.path, 'r').catch(() => undefined);
    if (!fh) return;
    try {
      const buf = Buffer.allocUnsafe(CHUNK);
      let carry = Buffer.alloc(0);
      let at = t.offset;
      while (at < size) {
        const { bytesRead } = await fh.read(buf, 0, Math.min(CHUNK, size - at), at);
        if (bytesRead === 0) break;
        at += bytesRead;
        const data = carry.length
          ? Buffer.concat([carry, buf.subarray(0, bytesRead)])
          : buf.subarray(0, bytesRead);
        let start = 0;
        for (let nl = data.indexOf(10); nl !== -1; nl = data.indexOf(10, start)) {
          this.emit(t, data.toString('utf8', start, nl));
          start = nl + 1;
        }
        // A line still being written stays in the file until its newline comes.
        t.offset = at - (data.length - start);
        carry = Buffer.from(data.subarray(start));
      }
    } finally {
      await fh.close();
    }
  }

  private emit(t: Tracked, raw: string): void {
    const record = parseCriRecord(raw);
    if (!record) {
      this.opts.onBadLine?.(t.file);
      return;
    }
    const line = t.joiner.push(record);
    if (line) this.opts.onLine(t.file, line);
  }

  private async loadPositions(): Promise<void> {
    const file = this.opts.positionsFile;
    if (!file) return;
    const text = await readFile(file, 'utf8').catch(() => undefined);
    if (text === undefined) return;
    try {
      const parsed = JSON.parse(text) as { positions?: Record<string, { offset?: unknown }> };
      for (const [key, p] of Object.entries(parsed.positions ?? {})) {
        if (typeof p.offset === 'number') this.saved.set(key, p.offset);
      }
      // Positions exist: this is a restart, and every file without one is new since then.
      this.firstPoll = false;
    } catch {
      // A torn or foreign file: start as on a first start.
    }
  }

  private async savePositions(): Promise<void> {
    const file = this.opts.positionsFile;
    this.lastSave = Date.now();
    if (!file) return;
    const positions: Record<string, { path: string; offset: number }> = {};
    for (const [key, t] of this.tracked) positions[key] = { path: t.path, offset: t.offset };
    // Written aside and renamed: a crash mid-write leaves the last whole file.
    await writeFile(`${file}.tmp`, JSON.stringify({ positions }));
    await rename(`${file}.tmp`, file);
  }
}

async function entries(dir: string): Promise<string[]> {
  return readdir(dir).catch(() => []);
}

function cmp(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
