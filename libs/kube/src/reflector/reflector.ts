/**
 * A list-then-watch loop for one kind, modelled on client-go's reflector, over the Kubernetes port only.
 *
 * It lists once (paged), then watches from the list's resourceVersion with bookmarks, re-watching from
 * the last version it saw whenever a watch ends. Only a 410 (the version left the server's history) makes
 * it list again, and that relist is diffed against what it holds (mark and sweep), so handlers see only
 * what changed. Every other failure is retried with exponential back-off and jitter, for ever: the
 * reflector gives up only on `stop()`.
 *
 * It holds a caller-given projection of each object, never the object, keyed `namespace/name`. The
 * projection carries the object's resourceVersion (so a relisted object that did not change is neither
 * projected nor reported): no wrapper per object, which at 220,000 objects was 9 MB.
 * Handlers run synchronously, in order, as the loop applies each change; one that throws is reported to
 * the observer and the loop goes on.
 *
 * Here: the loop (list, watch, back-off, relist on request). What it holds is store.ts; how a
 * watch ended, watch-outcome.ts; its options and callbacks, options.ts.
 */
import { abortableSleep, unlessAborted } from './abortable.js';
import { Backoff, DEFAULT_BACKOFF } from './backoff.js';
import { type KubeApiError, classify } from '../port/errors.js';
import type { ListResult, Select, WatchEvent, WatchHandle, WatchedResource } from '../port/port.js';
import {
  DEFAULT_DEADLINE_GRACE_MS,
  DEFAULT_HEALTHY_AFTER_MS,
  DEFAULT_WATCH_TIMEOUT_SECONDS,
  type HeldVersion,
  type ReflectorErrorInfo,
  type ReflectorObserver,
  type ReflectorOptions,
  type ReflectorPort,
  type ReflectorState,
  type RelistStats,
  type SyncReason,
  type Versioned,
} from './options.js';
import { type AnyWatched, HeldObjects, type Row, objectKey } from './store.js';
import {
  type WatchOutcome,
  type WatchRun,
  closedOutcome,
  errorEventOutcome,
  failedOutcome,
} from './watch-outcome.js';

export { abortableSleep } from './abortable.js';
export * from './options.js';
export { objectKey } from './store.js';

export class Reflector<R extends WatchedResource, P extends Versioned> {
  private readonly kube: ReflectorPort;
  private readonly resource: R;
  private readonly namespace: string | undefined;
  private readonly labelSelector: string | undefined;
  private readonly fieldSelector: string | undefined;
  private readonly observer: ReflectorObserver | undefined;
  private readonly pageSize: number | undefined;
  private readonly timeoutRange: { min: number; max: number };
  private readonly deadlineGraceMs: number;
  private readonly healthyAfterMs: number;
  private readonly maxBackoffMs: number;
  private readonly now: () => number;
  private readonly sleep: (ms: number, signal: AbortSignal) => Promise<void>;
  private readonly random: () => number;
  private readonly backoff: Backoff;

  private readonly store: HeldObjects<P>;
  private currentState: ReflectorState = 'stopped';
  private rv = '';
  /** The watch would start at the last list's version: nothing arrived since. */
  private rvFromList = false;
  /** The next step is a list, for this reason. */
  private pendingList: SyncReason | undefined = 'start';
  private relistDetail: string | undefined;
  /** Callers of relist() waiting for their list to be applied. */
  private readonly relistWaiters: { resolve: () => void; reject: (error: Error) => void }[] = [];
  private loop: Promise<void> | undefined;
  private stopping = false;
  private readonly abort = new AbortController();
  private watchHandle: WatchHandle | undefined;
  private synced_ = false;
  private lastEventAt_: number | undefined;
  private lastSyncedAt_: number | undefined;
  private watchingSince_: number | undefined;

  /** Resolves once the first list is applied; rejects if the reflector is stopped before that. */
  readonly synced: Promise<void>;
  private resolveSynced: () => void = () => undefined;
  private rejectSynced: (error: Error) => void = () => undefined;

  constructor(options: ReflectorOptions<R, P>) {
    this.kube = options.kube;
    this.resource = options.resource;
    this.namespace = options.namespace;
    this.labelSelector = options.labelSelector;
    this.fieldSelector = options.fieldSelector;
    this.observer = options.observer;
    this.store = new HeldObjects<P>({
      keyOf: options.keyOf ?? objectKey,
      // The object of a watch of R is a Watched[R]: the union's projection takes it as such.
      project: options.project as (object: AnyWatched, rv: HeldVersion) => P | undefined,
      handler: options.handler,
      report: (error, info) => {
        this.report(error, info);
      },
    });
    this.pageSize = options.pageSize;
    this.timeoutRange = options.watchTimeoutSeconds ?? DEFAULT_WATCH_TIMEOUT_SECONDS;
    const { min, max } = this.timeoutRange;
    if (!(Number.isInteger(min) && Number.isInteger(max) && min >= 1 && max >= min)) {
      throw new RangeError('watchTimeoutSeconds needs whole seconds with 1 ≤ min ≤ max');
    }
    this.deadlineGraceMs = options.deadlineGraceMs ?? DEFAULT_DEADLINE_GRACE_MS;
    this.healthyAfterMs = options.healthyAfterMs ?? DEFAULT_HEALTHY_AFTER_MS;
    this.maxBackoffMs = options.backoff?.maxMs ?? DEFAULT_BACKOFF.maxMs;
    this.now = options.now ?? Date.now;
    this.sleep = options.sleep ?? abortableSleep;
    this.random = options.random ?? Math.random;
    this.backoff = new Backoff(options.backoff, this.random);
    this.synced = new Promise<void>((resolve, reject) => {
      this.resolveSynced = resolve;
      this.rejectSynced = reject;
    });
    // A caller that never awaits `synced` must not see an unhandled rejection when stopping early.
    this.synced.catch(() => undefined);
  }

  get state(): ReflectorState {
    return this.currentState;
  }

  /** True once the first list has been applied (and for ever after). */
  get hasSynced(): boolean {
    return this.synced_;
  }

  /** The last resourceVersion seen: of the last list, event or bookmark ('' before the first list). */
  get resourceVersion(): string {
    return this.rv;
  }

  /** When the last watch event or bookmark arrived (ms), undefined before the first. */
  get lastEventAt(): number | undefined {
    return this.lastEventAt_;
  }

  /** When the last full list was applied (ms). */
  get lastSyncedAt(): number | undefined {
    return this.lastSyncedAt_;
  }

  /** When the current watch was opened (ms); undefined while not watching. */
  get watchingSince(): number | undefined {
    return this.watchingSince_;
  }

  get size(): number {
    return this.store.size;
  }

  get(key: string): P | undefined {
    return this.store.get(key);
  }

  keys(): IterableIterator<string> {
    return this.store.keys();
  }

  values(): IterableIterator<P> {
    return this.store.values();
  }

  entries(): IterableIterator<[string, P]> {
    return this.store.entries();
  }

  [Symbol.iterator](): IterableIterator<[string, P]> {
    return this.store.entries();
  }

  /** Starts the loop (once; a stopped reflector cannot start again). */
  start(): void {
    if (this.stopping) throw new Error('a stopped reflector cannot start again');
    if (this.loop) return;
    this.loop = this.run();
  }

  /**
   * Ends the watch and any back-off wait, then waits for the loop to finish; a list in flight is not
   * waited for, and its answer is dropped. No handler runs after it resolves, and no timer is left behind.
   */
  async stop(): Promise<void> {
    if (!this.stopping) {
      this.stopping = true;
      this.abort.abort();
      this.watchHandle?.stop();
      if (!this.synced_)
        this.rejectSynced(new Error(`the ${this.resource} reflector stopped before its first list`));
    }
    await this.loop;
    const stopped = new Error(`the ${this.resource} reflector stopped before the relist`);
    for (const waiter of this.relistWaiters.splice(0)) waiter.reject(stopped);
  }

  /**
   * Lists again and applies the difference, then calls onSynced('requested'), e.g. after the caller lost
   * its copy downstream (it can rewrite it from `entries()` then). Stops the current watch; during a
   * back-off the list waits for the back-off, and during a list another one follows it; requests before
   * one list starts share it. Before the first list has been applied, that list serves (it is `synced`).
   * Resolves once the list is applied; rejects if the reflector stops first (or has stopped).
   */
  relist(detail?: string): Promise<void> {
    if (this.stopping) {
      const refused = Promise.reject(new Error(`the ${this.resource} reflector is stopped`));
      refused.catch(() => undefined);
      return refused;
    }
    if (!this.synced_) return this.synced;
    this.pendingList = 'requested';
    this.relistDetail = detail;
    const applied = new Promise<void>((resolve, reject) => {
      this.relistWaiters.push({ resolve, reject });
    });
    // A caller that does not await it must not see an unhandled rejection on stop.
    applied.catch(() => undefined);
    this.watchHandle?.stop();
    return applied;
  }

  private async run(): Promise<void> {
    while (!this.stopping) {
      try {
        const reason = this.pendingList;
        if (reason !== undefined) {
          this.pendingList = undefined;
          // Requests made from here on wait for the next list: this one may have started before the loss.
          const waiters = this.relistWaiters.splice(0);
          this.setState('listing');
          try {
            if (await this.listAndApply(reason)) for (const waiter of waiters) waiter.resolve();
            else this.relistWaiters.unshift(...waiters);
          } catch (e) {
            this.relistWaiters.unshift(...waiters);
            // A requested relist that came meanwhile takes over; otherwise the same list is retried.
            this.pendingList ??= reason;
            if (!this.stopping) await this.backOff(classify(e), 'list');
          }
          continue;
        }
        await this.handleOutcome(await this.watchOnce());
      } catch (e) {
        // Not a Kubernetes failure (those are handled above) but a bug here: report it and go on.
        this.report(e, { source: 'watch' });
        if (!this.stopping) await this.sleep(this.backoff.next(), this.abort.signal);
      }
    }
    this.watchingSince_ = undefined;
    this.setState('stopped');
  }

  private async handleOutcome(outcome: WatchOutcome): Promise<void> {
    if (this.stopping) return;
    switch (outcome.kind) {
      case 'interrupted':
        return;
      case 'timeout':
        this.observe((o) => o.onWatchRestart?.('timeout'));
        return;
      case 'closed':
        this.observe((o) => o.onWatchRestart?.('closed'));
        // A server that closes every watch at once would otherwise be hammered.
        if (outcome.short) await this.backOff(undefined, 'watch');
        return;
      case 'expired':
        this.observe((o) => o.onWatchRestart?.('expired'));
        this.pendingList ??= 'expired';
        if (outcome.immediate) await this.backOff(undefined, 'watch');
        return;
      case 'error':
        this.observe((o) => o.onWatchRestart?.('error'));
        await this.backOff(outcome.error, 'watch');
        return;
    }
  }

  /** Waits out the next back-off delay (never shorter than the server's Retry-After, up to the cap). */
  private async backOff(error: KubeApiError | undefined, source: 'list' | 'watch'): Promise<void> {
    let delay = this.backoff.next();
    const retryAfter = error?.retryAfterSeconds;
    if (retryAfter !== undefined) delay = Math.max(delay, Math.min(retryAfter * 1000, this.maxBackoffMs));
    if (error) this.report(error, { source, retryInMs: delay });
    if (this.stopping) return;
    this.setState('backoff');
    await this.sleep(delay, this.abort.signal);
  }

  private drawTimeoutSeconds(): number {
    const { min, max } = this.timeoutRange;
    return Math.min(max, min + Math.floor(this.random() * (max - min + 1)));
  }

  private async watchOnce(): Promise<WatchOutcome> {
    const timeoutSeconds = this.drawTimeoutSeconds();
    const startedAt = this.now();
    const fromList = this.rvFromList;
    let delivered = 0;
    let ended: WatchOutcome | undefined;
    let handle: WatchHandle | undefined;
    const ctx = { verb: 'watch', resource: this.resource, namespace: this.namespace };
    const run = (): WatchRun => ({
      ranMs: this.now() - startedAt,
      timeoutSeconds,
      fresh: fromList && delivered === 0,
    });
    this.watchingSince_ = startedAt;
    this.setState('watching');
    try {
      handle = this.kube.watch(
        this.resource,
        this.namespace,
        {
          ...(this.labelSelector !== undefined ? { labelSelector: this.labelSelector } : {}),
          ...(this.fieldSelector !== undefined ? { fieldSelector: this.fieldSelector } : {}),
          resourceVersion: this.rv,
          allowWatchBookmarks: true,
          timeoutSeconds,
          deadlineMs: timeoutSeconds * 1000 + this.deadlineGraceMs,
        },
        (event) => {
          if (ended !== undefined || this.stopping) return;
          if (event.type === 'ERROR') {
            ended = errorEventOutcome(run(), event.object, ctx);
            handle?.stop();
            return;
          }
          delivered++;
          this.apply(event);
        },
      );
      this.watchHandle = handle;
      // stop() or relist() may have come while the port opened the stream.
      if (ended !== undefined || this.stopping || this.pendingList !== undefined) handle.stop();
      await handle.done;
    } catch (e) {
      ended ??= failedOutcome(run(), classify(e, ctx));
    } finally {
      this.watchHandle = undefined;
      this.watchingSince_ = undefined;
    }
    const whole = run();
    if (whole.ranMs >= this.healthyAfterMs) this.backoff.reset();
    if (this.stopping || (ended === undefined && this.pendingList !== undefined))
      return { kind: 'interrupted' };
    return ended ?? closedOutcome(whole, delivered);
  }

  private apply(event: Exclude<WatchEvent<AnyWatched>, { type: 'ERROR' }>): void {
    if (event.type !== 'BOOKMARK') this.store.apply(event.type, event.object);
    const rv = event.object.metadata.resourceVersion;
    if (typeof rv === 'string' && rv !== '') this.rv = rv;
    this.rvFromList = false;
    this.lastEventAt_ = this.now();
    this.observe((o) => o.onEvent?.(event.type));
  }

  /**
   * One full list, diffed against what is held: sweeps the absent, upserts the new and changed. False
   * when stop() came first and the answer was dropped.
   */
  private async listAndApply(reason: SyncReason): Promise<boolean> {
    const startedAt = this.now();
    const listing = this.list<Row<P>>((object) => this.store.rowOf(object));
    // stop() does not wait for a list (the port cannot cancel one): its answer is dropped when it comes.
    const result = await unlessAborted(listing, this.abort.signal);
    if (result === undefined || this.stopping) return false;
    const { upserted, deleted } = this.store.applyList(result.items);
    this.rv = result.resourceVersion;
    this.rvFromList = true;
    this.lastSyncedAt_ = this.now();
    const detail = reason === 'requested' ? this.relistDetail : undefined;
    this.relistDetail = undefined;
    this.store.synced(reason);
    const stats: RelistStats = {
      objects: this.store.size,
      upserted,
      deleted,
      durationMs: this.now() - startedAt,
      ...(detail !== undefined ? { detail } : {}),
    };
    this.observe((o) => o.onRelist?.(reason, stats));
    if (!this.synced_) {
      this.synced_ = true;
      this.resolveSynced();
    }
    return true;
  }

  private list<U>(select: Select<AnyWatched, U>): Promise<ListResult<U>> {
    // Every watched resource lists the same way; Events are chosen by a field selector, the rest by labels.
    const client = this.kube[this.resource] as {
      list(
        namespace: string | undefined,
        selector: string | undefined,
        pageSize: number | undefined,
        select: Select<AnyWatched, U>,
      ): Promise<ListResult<U>>;
    };
    const selector = this.resource === 'events' ? this.fieldSelector : this.labelSelector;
    return client.list(this.namespace, selector, this.pageSize, select);
  }

  private report(error: unknown, info: ReflectorErrorInfo): void {
    this.observe((o) => o.onError?.(error, info));
  }

  private observe(call: (observer: ReflectorObserver) => void): void {
    if (!this.observer) return;
    try {
      call(this.observer);
    } catch {
      // An observer is for metrics and logs; its failure must not disturb the loop, and has nowhere to go.
    }
  }

  private setState(next: ReflectorState): void {
    const previous = this.currentState;
    if (previous === next) return;
    this.currentState = next;
    this.observe((o) => o.onStateChange?.(next, previous));
  }
}
