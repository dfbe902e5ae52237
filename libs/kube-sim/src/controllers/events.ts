/**
 * core/v1 Events as client-go's legacy recorder writes them: `<object>.<16 hex>` names, and a repeat of the
 * same (object, reason, message) bumps `count` and `lastTimestamp` instead of adding an Event. Events are
 * best effort: a failure to write one never fails the controller that records it.
 */
import type { ResourceType } from '../resources.js';
import type { Store } from '../store.js';
import type { KubeObject } from '../types.js';
import { timestamp } from './pods.js';
import { type Timers, reportError } from './timers.js';

export interface EventSource {
  component: string;
  host?: string;
}

export type EventType = 'Normal' | 'Warning';

/** The apiserver's default --event-ttl. */
const EVENT_TTL_MS = 60 * 60 * 1000;
const SWEEP_INTERVAL_MS = 60 * 1000;

export class EventRecorder {
  /** dedupe key → the Event that holds it */
  private readonly names = new Map<string, { namespace: string; name: string }>();
  private lastSuffix = 0n;

  constructor(
    private readonly store: Store,
    private readonly eventType: ResourceType,
    private readonly timers: Timers,
  ) {
    this.scheduleSweep();
  }

  record(
    involved: KubeObject,
    type: EventType,
    reason: string,
    message: string,
    source: EventSource,
    fieldPath?: string,
  ): void {
    try {
      this.write(involved, type, reason, message, source, fieldPath);
    } catch (err) {
      // A namespace being deleted refuses new content (403); that is no reason to stop the caller.
      reportError('event recorder', err);
    }
  }

  private write(
    involved: KubeObject,
    type: EventType,
    reason: string,
    message: string,
    source: EventSource,
    fieldPath: string | undefined,
  ): void {
    const namespace = involved.metadata.namespace || 'default';
    const dedupe = [involved.metadata.uid, fieldPath ?? '', type, reason, message, source.component].join(
      '\0',
    );
    const now = timestamp(this.store.now());
    const ref = this.names.get(dedupe);
    if (ref) {
      const existing = this.store.get(this.eventType, ref.namespace, ref.name);
      if (existing) {
        const next = structuredClone(existing);
        next['count'] = (typeof existing['count'] === 'number' ? existing['count'] : 1) + 1;
        next['lastTimestamp'] = now;
        this.store.replace(this.eventType, next);
        return;
      }
    }
    const involvedObject: Record<string, string> = {
      kind: involved.kind,
      namespace: involved.metadata.namespace ?? '',
      name: involved.metadata.name,
      uid: involved.metadata.uid,
      apiVersion: involved.apiVersion,
      resourceVersion: involved.metadata.resourceVersion,
    };
    if (!involved.metadata.namespace) delete involvedObject['namespace'];
    if (fieldPath) involvedObject['fieldPath'] = fieldPath;
    const name = `${involved.metadata.name}.${this.suffix()}`;
    this.store.create(this.eventType, {
      apiVersion: 'v1',
      kind: 'Event',
      metadata: { name, namespace, uid: '', resourceVersion: '', creationTimestamp: '' },
      involvedObject,
      reason,
      message,
      type,
      source: source.host
        ? { component: source.component, host: source.host }
        : { component: source.component },
      firstTimestamp: now,
      lastTimestamp: now,
      count: 1,
      eventTime: null,
      reportingComponent: source.component,
      reportingInstance: source.host ?? '',
    });
    this.names.set(dedupe, { namespace, name });
  }

  /** Hex nanoseconds since the epoch, as upstream, kept strictly increasing so names never collide. */
  private suffix(): string {
    let n = BigInt(this.store.now()) * 1_000_000n;
    if (n <= this.lastSuffix) n = this.lastSuffix + 1n;
    this.lastSuffix = n;
    return n.toString(16).padStart(16, '0');
  }

  private scheduleSweep(): void {
    this.timers.after(SWEEP_INTERVAL_MS, 'event sweep', () => {
      this.sweep();
      this.scheduleSweep();
    });
  }

  /** Drops Events past their TTL and forgets names of Events that are gone, as the apiserver's TTL does. */
  sweep(): void {
    const cutoff = this.store.now() - EVENT_TTL_MS;
    for (const ev of this.store.all(this.eventType)) {
      const last = typeof ev['lastTimestamp'] === 'string' ? Date.parse(ev['lastTimestamp']) : NaN;
      if (Number.isFinite(last) && last < cutoff) {
        try {
          this.store.delete(this.eventType, ev.metadata.namespace, ev.metadata.name);
        } catch (err) {
          reportError('event sweep', err);
        }
      }
    }
    for (const [dedupe, ref] of this.names) {
      if (!this.store.get(this.eventType, ref.namespace, ref.name)) this.names.delete(dedupe);
    }
  }
}
