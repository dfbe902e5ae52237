/**
 * A reflector's options, and what it tells its handler (the changes) and its observer (metrics and logs).
 */
import type { BackoffOptions } from './backoff.js';
import type { KubernetesPort, Watched, WatchedResource } from '../port/port.js';

/** The part of the port a reflector uses: any `KubernetesPort` is one. */
export type ReflectorPort = Pick<KubernetesPort, WatchedResource | 'watch'>;

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
  /** In field selector syntax; only for `events`, which are listed by field (the port's `events.list`). */
  fieldSelector?: string;
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

/**
 * An object's resourceVersion as held: opaque to clients, but etcd's are decimal integers, kept as a
 * number (no string per object: at 220,000 objects that was 6 MB); anything else is kept as it came.
 */
export type HeldVersion = number | string;

export const DEFAULT_WATCH_TIMEOUT_SECONDS = { min: 300, max: 600 } as const;
export const DEFAULT_DEADLINE_GRACE_MS = 30_000;
export const DEFAULT_HEALTHY_AFTER_MS = 120_000;
