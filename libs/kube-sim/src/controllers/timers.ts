/**
 * Every timer the controllers start goes through here, so `stop()` can clear them all and a throwing
 * callback is logged instead of taking the process down.
 */
import { StatusError } from '../errors.js';

export type Timer = NodeJS.Timeout;

/** A controller callback failed in a way no retry fixes: log it, keep the simulator running. */
export function reportError(where: string, err: unknown): void {
  // NotFound / Conflict / AlreadyExists are the normal races between controllers and API clients.
  if (err instanceof StatusError) return;
  console.error(`kube-sim ${where}:`, err);
}

export class Timers {
  private readonly handles = new Set<Timer>();
  private readonly immediates = new Set<NodeJS.Immediate>();
  private stopped = false;

  get isStopped(): boolean {
    return this.stopped;
  }

  /** Runs fn after ms (unref'd: a forgotten simulator does not keep a test process alive). */
  after(ms: number, where: string, fn: () => void): Timer | undefined {
    if (this.stopped) return undefined;
    const h = setTimeout(
      () => {
        this.handles.delete(h);
        if (this.stopped) return;
        try {
          fn();
        } catch (err) {
          reportError(where, err);
        }
      },
      Math.max(0, Math.round(ms)),
    );
    h.unref();
    this.handles.add(h);
    return h;
  }

  /** Runs fn on the next turn of the event loop, after pending I/O callbacks. */
  immediate(where: string, fn: () => void): void {
    if (this.stopped) return;
    const h = setImmediate(() => {
      this.immediates.delete(h);
      if (this.stopped) return;
      try {
        fn();
      } catch (err) {
        reportError(where, err);
      }
    });
    this.immediates.add(h);
  }

  cancel(h: Timer | undefined): void {
    if (!h) return;
    clearTimeout(h);
    this.handles.delete(h);
  }

  stop(): void {
    this.stopped = true;
    for (const h of this.handles) clearTimeout(h);
    for (const h of this.immediates) clearImmediate(h);
    this.handles.clear();
    this.immediates.clear();
  }
}
