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
 */
import { Backoff, type BackoffOptions, DEFAULT_BACKOFF } from './backoff.js';
import { KubeApiError, classify } from './errors.js';
import type {
  KubernetesPort,
  ListResult,
  Select,
  WatchEvent,
  WatchHandle,
  WatchStatus,
  Watched,
  WatchedResource,
} from './port.js';

/** The part of the port a reflector uses: any `KubernetesPort` is one. */
export type ReflectorPort = Pick<
  KubernetesPort,
  'listDeployments' | 'listStatefulSets' | 'listPods' | 'listJobs' | 'watch'
>;

export type ReflectorState = 'listing' | 'watching' | 'backoff' | 'stopped';
/** Why a full list was applied: the first one, after a 410, or on `relist()`. */
export type SyncReason = 'start' | 'expired' | 'requested';
/**
 * Why a watch was opened again: the server closed it at its timeoutSeconds (or the client deadline
 * passed), it closed earlier, it failed, or its resourceVersion expired (a relist comes first).
 */
export type WatchRestartReason = 'timeout' | 'closed' | 'error' | 'expired';
export type AppliedEventType = 'ADDED' | 'MODIFIED' | 'DELETED' | 'BOOKMARK';

export interface ReflectorHandler<P> {
  /** An object appeared or changed (`prev` undefined when it is new to the reflector). */
  onUpsert?(key: string, next: P, prev: P | undefined): void;
  /** An object is gone, or its projection became undefined. */
  onDelete?(key: string, prev: P): void;
  /** A full list has been applied: what the reflector holds now matches the cluster at the list's version. */
  onSynced?(reason: SyncReason): void;
}

export interface ReflectorErrorInfo {
  /** What failed: a list or watch (a KubeApiError), a handler, or the projection (then `key` is set). */
  source: 'list' | 'watch' | 'handler' | 'project';
  key?: string;
  /** For list and watch failures: the back-off before the next attempt. */
  retryInMs?: number;
}

export interface RelistStats {
  /** Objects held after the list. */
  objects: number;
  /** New or changed objects (each reported through onUpsert). */
  upserted: number;
  /** Objects gone since the previous list (each reported through onDelete). */
  deleted: number;
  durationMs: number;
  /** What the caller gave `relist()`, for a requested relist. */
  detail?: string;
}

/** Callbacks for metrics and logs; each is optional, and one that throws is ignored. */
export interface ReflectorObserver {
  /** A watch event was applied (a BOOKMARK only advances the resourceVersion). */
  onEvent?(type: AppliedEventType): void;
  /** A full list was applied (after the handlers' onSynced). */
  onRelist?(reason: SyncReason, stats: RelistStats): void;
  onWatchRestart?(reason: WatchRestartReason): void;
  /**
   * Something failed. List and watch failures are KubeApiErrors; one with `transient: false` (403
   * Forbidden, …) is retried all the same, as an operator may fix it, but deserves a louder log.
   */
  onError?(error: unknown, info: ReflectorErrorInfo): void;
  onStateChange?(state: ReflectorState, previous: ReflectorState): void;
}

/** Everything but the kind and its projection. */
export interface ReflectorBaseOptions<P> {
  kube: ReflectorPort;
  /** undefined: every namespace. */
  namespace: string | undefined;
  /** In query syntax (`a=b,c in (d)`); undefined: every object of the kind. */
  labelSelector?: string;
  /**
   * The key an object is held under (default `namespace/name`). A reflector of one namespace may use
   * the name alone: that is the very string the object's name arrived in, where `namespace/name` is a
   * new string per object (megabytes at 100,000 objects).
   */
  keyOf?: (metadata: { namespace?: string | undefined; name: string }) => string;
  handler?: ReflectorHandler<P>;
  observer?: ReflectorObserver;
  /** Objects per list page (default 500). */
  pageSize?: number;
  /** Each watch asks the server to close it after a random whole number of seconds in this range (default 300–600). */
  watchTimeoutSeconds?: { min: number; max: number };
  /** The client aborts a watch this long after its timeoutSeconds, should the server not close it (default 30 s). */
  deadlineGraceMs?: number;
  /** Back-off between failed attempts (default 0.8 s doubling to 30 s, ×[1, 1.5) jitter). */
  backoff?: BackoffOptions;
  /** A watch that lasted this long resets the back-off (default 2 min). */
  healthyAfterMs?: number;
  /** Injectable for tests: the clock (ms), an abortable sleep and the random source. */
  now?: () => number;
  sleep?: (ms: number, signal: AbortSignal) => Promise<void>;
  random?: () => number;
}

/**
 * The kind to reflect and what to hold of each of its objects: undefined holds nothing (and an object
 * held so far is deleted). The projection must be pure.
 */
export interface ReflectorOptions<
  R extends WatchedResource,
  P extends Versioned,
> extends ReflectorBaseOptions<P> {
  resource: R;
  /** `rv` is the object's resourceVersion as held: the projection keeps it as its own `rv`. */
  project: (object: Watched[R], rv: HeldVersion) => P | undefined;
}

/** A projection: whatever the caller keeps, and the resourceVersion it was made from. */
export interface Versioned {
  readonly rv: HeldVersion;
}

export const DEFAULT_WATCH_TIMEOUT_SECONDS = { min: 300, max: 600 } as const;
export const DEFAULT_DEADLINE_GRACE_MS = 30_000;
export const DEFAULT_HEALTHY_AFTER_MS = 120_000;
/** A watch that closes sooner than this without delivering anything counts as a failure (as client-go). */
const SHORT_WATCH_MS = 1000;
/**
 * A normal close this close to timeoutSeconds (1 s, or a tenth of a short timeout) is the server's
 * timeout: its timer starts a little after ours, and clocks differ.
 */
const TIMEOUT_TOLERANCE_MS = 1000;

/** The reflector's key of an object: `namespace/name` (`/name` for a cluster-scoped one). */
export function objectKey(metadata: { namespace?: string | undefined; name: string }): string {
  return `${metadata.namespace ?? ''}/${metadata.name}`;
}

/** Resolves after `ms`, or as soon as `signal` aborts; leaves no timer behind either way. */
export function abortableSleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) {
      resolve();
      return;
    }
    const done = (): void => {
      clearTimeout(timer);
      signal.removeEventListener('abort', done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal.addEventListener('abort', done, { once: true });
  });
}

/** An object of any watched kind. */
type AnyWatched = Watched[WatchedResource];

/**
 * An object's resourceVersion as held: opaque to clients, but etcd's are decimal integers, kept as a
 * number (no string per object: at 220,000 objects that was 6 MB); anything else is kept as it came.
 */
export type HeldVersion = number | string;

function heldVersion(rv: string): HeldVersion {
  return /^[1-9]\d{0,14}$/.test(rv) ? Number(rv) : rv;
}

/** A listed object: `entry` absent when the reflector already holds it at this version. */
interface Row<P> {
  key: string;
  value?: P;
}

type WatchOutcome =
  /** stop() or relist() ended it. */
  | { kind: 'interrupted' }
  /** The server closed it at its timeoutSeconds, or the client deadline passed. */
  | { kind: 'timeout' }
  /** `short`: ended within a second having delivered nothing. */
  | { kind: 'closed'; short: boolean }
  /** `immediate`: the list's own version expired at once, so relisting at once could loop. */
  | { kind: 'expired'; immediate: boolean }
  | { kind: 'error'; error: KubeApiError };

function isExpired(status: number | undefined, reason: string | undefined): boolean {
  return status === 410 || reason === 'Expired' || reason === 'Gone';
}

export class Reflector<R extends WatchedResource, P extends Versioned> {
  private readonly kube: ReflectorPort;
  private readonly resource: R;
  private readonly namespace: string | undefined;
  private readonly labelSelector: string | undefined;
  private readonly project: (object: AnyWatched, rv: HeldVersion) => P | undefined;
  private readonly keyOf: (metadata: { namespace?: string | undefined; name: string }) => string;
  private readonly handler: ReflectorHandler<P> | undefined;
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

  private readonly store = new Map<string, P>();
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
    this.project = options.project;
    this.keyOf = options.keyOf ?? objectKey;
    this.handler = options.handler;
    this.observer = options.observer;
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
    return this.entries();
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
    this.watchingSince_ = startedAt;
    this.setState('watching');
    try {
      handle = this.kube.watch(
        this.resource,
        this.namespace,
        {
          ...(this.labelSelector !== undefined ? { labelSelector: this.labelSelector } : {}),
          resourceVersion: this.rv,
          allowWatchBookmarks: true,
          timeoutSeconds,
          deadlineMs: timeoutSeconds * 1000 + this.deadlineGraceMs,
        },
        (event) => {
          if (ended !== undefined || this.stopping) return;
          if (event.type === 'ERROR') {
            ended = this.errorEventOutcome(event.object, fromList && delivered === 0, startedAt);
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
      if (ended === undefined) {
        const error = classify(e, { verb: 'watch', resource: this.resource, namespace: this.namespace });
        const ranMs = this.now() - startedAt;
        if (isExpired(error.status, error.reason)) {
          ended = { kind: 'expired', immediate: fromList && delivered === 0 && ranMs < SHORT_WATCH_MS };
        } else if (
          error.status === undefined &&
          error.reason === 'Timeout' &&
          ranMs >= timeoutSeconds * 1000
        ) {
          // The client deadline: the server kept a silent stream open past its timeout.
          ended = { kind: 'timeout' };
        } else {
          ended = { kind: 'error', error };
        }
      }
    } finally {
      this.watchHandle = undefined;
      this.watchingSince_ = undefined;
    }
    const ranMs = this.now() - startedAt;
    if (ranMs >= this.healthyAfterMs) this.backoff.reset();
    if (this.stopping || (ended === undefined && this.pendingList !== undefined))
      return { kind: 'interrupted' };
    if (ended !== undefined) return ended;
    const tolerance = Math.min(TIMEOUT_TOLERANCE_MS, timeoutSeconds * 100);
    if (ranMs >= timeoutSeconds * 1000 - tolerance) return { kind: 'timeout' };
    return { kind: 'closed', short: delivered === 0 && ranMs < SHORT_WATCH_MS };
  }

  private errorEventOutcome(status: WatchStatus, fromList: boolean, startedAt: number): WatchOutcome {
    if (isExpired(status.code, status.reason)) {
      return { kind: 'expired', immediate: fromList && this.now() - startedAt < SHORT_WATCH_MS };
    }
    const ctx = { verb: 'watch', resource: this.resource, namespace: this.namespace };
    // classify reads a numeric `code` and a Status `body`, as client-node's ApiException carries them.
    const error =
      typeof status.code === 'number'
        ? classify({ code: status.code, body: status }, ctx)
        : new KubeApiError({
            status: undefined,
            reason: status.reason ?? 'Unknown',
            message: status.message ?? 'the watch sent an ERROR event',
            transient: true,
            operation: `watch ${this.resource}${this.namespace !== undefined ? ` ${this.namespace}` : ''}`,
          });
    return { kind: 'error', error };
  }

  private apply(event: Exclude<WatchEvent<AnyWatched>, { type: 'ERROR' }>): void {
    if (event.type !== 'BOOKMARK') {
      const object = event.object;
      const key = this.keyOf(object.metadata);
      const held = this.store.get(key);
      if (event.type === 'DELETED') {
        if (held) this.remove(key, held);
      } else {
        const rv = heldVersion(object.metadata.resourceVersion);
        if (held?.rv !== rv) {
          const value = this.projectOf(object, key, rv);
          if (value !== undefined) this.put(key, value, held);
          else if (held) this.remove(key, held);
        }
      }
    }
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
    const listing = this.list<Row<P>>((object) => {
      const key = this.keyOf(object.metadata);
      const rv = heldVersion(object.metadata.resourceVersion);
      // Held at this version: the projection is the same, so it is neither recomputed nor reported.
      if (this.store.get(key)?.rv === rv) return { key };
      const value = this.projectOf(object, key, rv);
      return value === undefined ? undefined : { key, value };
    });
    // stop() does not wait for a list (the port cannot cancel one): its answer is dropped when it comes.
    const result = await this.unlessStopped(listing);
    if (result === undefined || this.stopping) return false;
    const listed = new Set<string>();
    for (const row of result.items) listed.add(row.key);
    let deleted = 0;
    for (const [key, held] of this.store) {
      if (listed.has(key)) continue;
      this.remove(key, held);
      deleted++;
    }
    listed.clear();
    let upserted = 0;
    for (const row of result.items) {
      if (row.value === undefined) continue;
      this.put(row.key, row.value, this.store.get(row.key));
      upserted++;
    }
    this.rv = result.resourceVersion;
    this.rvFromList = true;
    this.lastSyncedAt_ = this.now();
    const detail = reason === 'requested' ? this.relistDetail : undefined;
    this.relistDetail = undefined;
    this.callHandler(undefined, () => this.handler?.onSynced?.(reason));
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

  /**
   * `work`'s result, or undefined as soon as stop() is called. Not a Promise.race with a promise that
   * lives as long as the reflector: every race stays attached to it, holding its list's whole answer.
   */
  private unlessStopped<T>(work: Promise<T>): Promise<T | undefined> {
    const signal = this.abort.signal;
    if (signal.aborted) return Promise.resolve(undefined);
    return new Promise<T | undefined>((resolve, reject) => {
      const onStop = (): void => {
        resolve(undefined);
      };
      signal.addEventListener('abort', onStop, { once: true });
      work.then(
        (value) => {
          signal.removeEventListener('abort', onStop);
          resolve(value);
        },
        (error: unknown) => {
          signal.removeEventListener('abort', onStop);
          reject(error instanceof Error ? error : new Error(String(error)));
        },
      );
    });
  }

  private list<U>(select: Select<AnyWatched, U>): Promise<ListResult<U>> {
    const { kube, namespace, labelSelector, pageSize } = this;
    switch (this.resource) {
      case 'deployments':
        return kube.listDeployments(namespace, labelSelector, pageSize, select);
      case 'statefulsets':
        return kube.listStatefulSets(namespace, labelSelector, pageSize, select);
      case 'pods':
        return kube.listPods(namespace, labelSelector, pageSize, select);
      case 'jobs':
        return kube.listJobs(namespace, labelSelector, pageSize, select);
    }
  }

  /** The caller's projection; one that throws is reported and the object treated as not wanted. */
  private projectOf(object: AnyWatched, key: string, rv: HeldVersion): P | undefined {
    try {
      return this.project(object, rv);
    } catch (e) {
      this.report(e, { source: 'project', key });
      return undefined;
    }
  }

  private put(key: string, value: P, held: P | undefined): void {
    this.store.set(key, value);
    this.callHandler(key, () => this.handler?.onUpsert?.(key, value, held));
  }

  private remove(key: string, held: P): void {
    this.store.delete(key);
    this.callHandler(key, () => this.handler?.onDelete?.(key, held));
  }

  private callHandler(key: string | undefined, call: () => void): void {
    try {
      call();
    } catch (e) {
      this.report(e, { source: 'handler', ...(key !== undefined ? { key } : {}) });
    }
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
