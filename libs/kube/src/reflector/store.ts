/**
 * What a reflector holds: the caller's projection of each object, keyed `namespace/name`, changed by watch
 * events and by full lists (mark and sweep), each change passed to the handler as it is applied.
 */
import type { Watched, WatchedResource } from '../port/port.js';
import type { HeldVersion, ReflectorErrorInfo, ReflectorHandler, SyncReason, Versioned } from './options.js';

/** An object of any watched kind. */
export type AnyWatched = Watched[WatchedResource];

type KeyOf = (metadata: { namespace?: string | undefined; name: string }) => string;

/** The reflector's key of an object: `namespace/name` (`/name` for a cluster-scoped one). */
export function objectKey(metadata: { namespace?: string | undefined; name: string }): string {
  return `${metadata.namespace ?? ''}/${metadata.name}`;
}

function heldVersion(rv: string): HeldVersion {
  return /^[1-9]\d{0,14}$/.test(rv) ? Number(rv) : rv;
}

/** A listed object: `value` absent when it is already held at this version. */
export interface Row<P> {
  key: string;
  value?: P;
}

export interface HeldObjectsOptions<P> {
  keyOf: KeyOf;
  /** The caller's projection; undefined holds nothing. */
  project: (object: AnyWatched, rv: HeldVersion) => P | undefined;
  handler: ReflectorHandler<P> | undefined;
  /** Where a projection or handler that threw is reported. */
  report: (error: unknown, info: ReflectorErrorInfo) => void;
}

export class HeldObjects<P extends Versioned> {
  private readonly map = new Map<string, P>();

  constructor(private readonly options: HeldObjectsOptions<P>) {}

  get size(): number {
    return this.map.size;
  }

  get(key: string): P | undefined {
    return this.map.get(key);
  }

  keys(): IterableIterator<string> {
    return this.map.keys();
  }

  values(): IterableIterator<P> {
    return this.map.values();
  }

  entries(): IterableIterator<[string, P]> {
    return this.map.entries();
  }

  /** A watch event's object: held anew, changed (unless held at its version), or gone. */
  apply(type: 'ADDED' | 'MODIFIED' | 'DELETED', object: AnyWatched): void {
    const key = this.options.keyOf(object.metadata);
    const held = this.map.get(key);
    if (type === 'DELETED') {
      if (held) this.remove(key, held);
      return;
    }
    const rv = heldVersion(object.metadata.resourceVersion);
    if (held?.rv === rv) return;
    const value = this.projectOf(object, key, rv);
    if (value !== undefined) this.put(key, value, held);
    else if (held) this.remove(key, held);
  }

  /** What a full list keeps of a listed object (its `select`): undefined when nothing is to be held. */
  rowOf(object: AnyWatched): Row<P> | undefined {
    const key = this.options.keyOf(object.metadata);
    const rv = heldVersion(object.metadata.resourceVersion);
    // Held at this version: the projection is the same, so it is neither recomputed nor reported.
    if (this.map.get(key)?.rv === rv) return { key };
    const value = this.projectOf(object, key, rv);
    return value === undefined ? undefined : { key, value };
  }

  /** A full list's rows: sweeps what is held but was not listed, then upserts the new and changed. */
  applyList(rows: Row<P>[]): { upserted: number; deleted: number } {
    const listed = new Set<string>();
    for (const row of rows) listed.add(row.key);
    let deleted = 0;
    for (const [key, held] of this.map) {
      if (listed.has(key)) continue;
      this.remove(key, held);
      deleted++;
    }
    listed.clear();
    let upserted = 0;
    for (const row of rows) {
      if (row.value === undefined) continue;
      this.put(row.key, row.value, this.map.get(row.key));
      upserted++;
    }
    return { upserted, deleted };
  }

  /** Tells the handler a full list has been applied. */
  synced(reason: SyncReason): void {
    this.callHandler(undefined, () => this.options.handler?.onSynced?.(reason));
  }

  /** The caller's projection; one that throws is reported and the object treated as not wanted. */
  private projectOf(object: AnyWatched, key: string, rv: HeldVersion): P | undefined {
    try {
      return this.options.project(object, rv);
    } catch (e) {
      this.options.report(e, { source: 'project', key });
      return undefined;
    }
  }

  private put(key: string, value: P, held: P | undefined): void {
    this.map.set(key, value);
    this.callHandler(key, () => this.options.handler?.onUpsert?.(key, value, held));
  }

  private remove(key: string, held: P): void {
    this.map.delete(key);
    this.callHandler(key, () => this.options.handler?.onDelete?.(key, held));
  }

  private callHandler(key: string | undefined, call: () => void): void {
    try {
      call();
    } catch (e) {
      this.options.report(e, { source: 'handler', ...(key !== undefined ? { key } : {}) });
    }
  }
}
