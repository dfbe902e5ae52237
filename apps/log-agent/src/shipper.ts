/**
 * Turns the tailer's lines into Loggregator log envelopes: each pod's lines wait (in order, bounded) until
 * its origin is known, then leave stamped with the runtime's own time, OUT or ERR as the runtime wrote them.
 */
import type { Envelope } from '@opi/loggregator';
import type { ContainerLogFile, LogRecord } from '@opi/node-logs';
import type { LogSource } from '@opi/translation';
import type { LogOrigins } from './origins.js';

export type LineOutcome = 'shipped' | 'unmanaged' | 'dropped';

export interface ShipperDeps {
  origins: Pick<LogOrigins, 'cached' | 'resolve' | 'forget'>;
  send(e: Envelope): void;
  /** Lines one pod may hold while its origin is not yet known; beyond, its oldest are dropped. */
  maxPendingPerPod?: number;
  counted?(outcome: LineOutcome, n: number): void;
}

interface Waiting {
  file: ContainerLogFile;
  lines: LogRecord[];
  asking: boolean;
}

export function logEnvelope(source: LogSource, line: LogRecord): Envelope {
  return {
    timestampNs: line.timeNs,
    sourceId: source.sourceId,
    instanceId: source.instanceId,
    tags: source.tags,
    log: { payload: Buffer.from(line.text), type: line.stream === 'stderr' ? 'ERR' : 'OUT' },
  };
}

export class LogShipper {
  private readonly waiting = new Map<string, Waiting>();
  private readonly maxPending: number;

  constructor(private readonly deps: ShipperDeps) {
    this.maxPending = deps.maxPendingPerPod ?? 1000;
  }

  /** Pods whose lines wait for their origin. */
  get podsWaiting(): number {
    return this.waiting.size;
  }

  line(file: ContainerLogFile, line: LogRecord): void {
    const queued = this.waiting.get(file.podUid);
    const known = queued ? undefined : this.deps.origins.cached(file.podUid);
    if (known === 'unmanaged') return this.deps.counted?.('unmanaged', 1);
    if (known !== undefined && known !== 'pending') {
      this.deps.send(logEnvelope(known, line));
      return this.deps.counted?.('shipped', 1);
    }
    const w = queued ?? { file, lines: [], asking: false };
    this.waiting.set(file.podUid, w);
    w.lines.push(line);
    if (w.lines.length > this.maxPending) {
      w.lines.shift();
      this.deps.counted?.('dropped', 1);
    }
    this.ask(w);
  }

  /** Asks again for every pod still waiting (the agent calls it every second). */
  retry(): void {
    for (const w of this.waiting.values()) this.ask(w);
  }

  /** The pod's files are gone: what still waits for it is dropped. */
  forget(podUid: string): void {
    const w = this.waiting.get(podUid);
    if (w) this.deps.counted?.('dropped', w.lines.length);
    this.waiting.delete(podUid);
    this.deps.origins.forget(podUid);
  }

  private ask(w: Waiting): void {
    if (w.asking) return;
    w.asking = true;
    void this.deps.origins.resolve(w.file).then((r) => {
      w.asking = false;
      if (r === 'pending') return;
      this.waiting.delete(w.file.podUid);
      if (r === 'unmanaged') return this.deps.counted?.('unmanaged', w.lines.length);
      for (const l of w.lines) this.deps.send(logEnvelope(r, l));
      this.deps.counted?.('shipped', w.lines.length);
    });
  }
}
