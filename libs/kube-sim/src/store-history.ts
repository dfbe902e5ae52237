/**
 * The store's event history: every committed change in resourceVersion order, kept bounded, for watches
 * that resume from a version and for continue tokens read at their first page's version. Versions it no
 * longer holds get 410 Expired, as after an etcd compaction.
 */
import { errors } from './errors.js';
import type { ResourceType } from './resources.js';
import type { KubeObject } from './types.js';

export type EventType = 'ADDED' | 'MODIFIED' | 'DELETED';

export interface StoreEvent {
  type: EventType;
  rv: number;
  resource: ResourceType;
  object: KubeObject;
  /** The object before this change (absent on ADDED). */
  previous?: KubeObject;
}

export class EventHistory {
  private events: StoreEvent[] = [];
  /** Watches may resume from any rv ≥ this. */
  private watchHorizon = 0;
  private compactedAt = 0;

  /** Keeps at least the last `size` events. */
  constructor(private readonly size: number) {}

  /** Continue tokens and watches older than this get 410 (set by compact()). */
  get compactedRv(): number {
    return this.compactedAt;
  }

  push(e: StoreEvent): void {
    this.events.push(e);
    if (this.events.length > this.size * 2) {
      const drop = this.events.length - this.size;
      this.watchHorizon = (this.events[drop - 1]?.rv ?? this.watchHorizon) + 0;
      this.events = this.events.slice(drop);
    }
  }

  /** Forgets every event up to `rv` (the current one), as an etcd compaction does. */
  compact(rv: number): void {
    this.events = [];
    this.watchHorizon = rv;
    this.compactedAt = rv;
  }

  /**
   * Events after `rv` for a watch resuming there; throws 410 Expired when they are no longer kept.
   * `rv` of the last event the client saw; history replay starts after it.
   */
  since(rv: number): StoreEvent[] {
    if (rv < this.watchHorizon) {
      throw errors.expired(`too old resource version: ${rv} (${this.watchHorizon + 1})`);
    }
    // History is ordered by rv; find the first event after rv.
    let lo = 0;
    let hi = this.events.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if ((this.events[mid]?.rv ?? 0) <= rv) lo = mid + 1;
      else hi = mid;
    }
    return this.events.slice(lo);
  }
}
