/**
 * A per-key work queue, as client-go's workqueue: a key queued several times before it is processed is
 * processed once, keys are handled in batches on later turns of the event loop (so API requests are
 * served in between), and a handler that loses a race (409 Conflict, 404 NotFound) is retried with a
 * growing delay instead of failing.
 */
import { StatusError } from '../errors.js';
import { type Timer, type Timers, reportError } from './timers.js';

/** Keys handled per event-loop turn: large enough for throughput, small enough to keep the server responsive. */
const BATCH = 256;
const RETRY_BASE_MS = 10;
const RETRY_MAX_MS = 5_000;

export class WorkQueue {
  private readonly pending = new Set<string>();
  private readonly delayed = new Map<string, { due: number; timer: Timer | undefined }>();
  private readonly failures = new Map<string, number>();
  private scheduled = false;

  constructor(
    private readonly name: string,
    private readonly timers: Timers,
    private readonly handler: (key: string) => void,
  ) {}

  add(key: string): void {
    if (this.timers.isStopped) return;
    this.pending.add(key);
    this.schedule();
  }

  /** Queues key after ms; an earlier pending due time wins, as with workqueue.AddAfter. */
  addAfter(key: string, ms: number): void {
    if (ms <= 0) {
      this.add(key);
      return;
    }
    const due = Date.now() + ms;
    const current = this.delayed.get(key);
    if (current && current.due <= due) return;
    if (current) this.timers.cancel(current.timer);
    const timer = this.timers.after(ms, `${this.name} queue`, () => {
      this.delayed.delete(key);
      this.add(key);
    });
    this.delayed.set(key, { due, timer });
  }

  get size(): number {
    return this.pending.size;
  }

  private schedule(): void {
    if (this.scheduled) return;
    this.scheduled = true;
    this.timers.immediate(`${this.name} queue`, () => {
      this.scheduled = false;
      this.drain();
    });
  }

  private drain(): void {
    const batch: string[] = [];
    for (const key of this.pending) {
      batch.push(key);
      if (batch.length >= BATCH) break;
    }
    for (const key of batch) this.pending.delete(key);
    if (this.pending.size > 0) this.schedule();
    for (const key of batch) {
      if (this.timers.isStopped) return;
      this.process(key);
    }
  }

  private process(key: string): void {
    try {
      this.handler(key);
      this.failures.delete(key);
    } catch (err) {
      const n = (this.failures.get(key) ?? 0) + 1;
      this.failures.set(key, n);
      if (!(err instanceof StatusError)) reportError(`${this.name} ${key}`, err);
      this.addAfter(key, Math.min(RETRY_MAX_MS, RETRY_BASE_MS * 2 ** (n - 1)));
    }
  }
}

/**
 * A controller driven by one work queue of object keys: `enqueue` a key, `sync` runs for it (deduplicated,
 * retried by the queue). The workload controllers share this shape.
 */
export abstract class KeyedController {
  readonly queue: WorkQueue;

  constructor(name: string, timers: Timers) {
    this.queue = new WorkQueue(name, timers, (k) => {
      this.sync(k);
    });
  }

  enqueue(k: string): void {
    this.queue.add(k);
  }

  protected abstract sync(k: string): void;
}
