/** Shared by the leader election tests: virtual time, one Lease with optimistic concurrency, candidates. */
import { expect } from '@jest/globals';
import { AlreadyExistsError, ConflictError, KubeApiError } from '../port/errors.js';
import { LeaderElector, type LeaderElectorOptions, type LeasePort } from './leader-election.js';
import type { Stored } from '../port/objects.js';
import type { Lease } from '@opi/kube-objects';

export const NS = 'opi-system';
export const NAME = 'opi-cache-writer';
export const EPOCH = Date.UTC(2026, 11, 1, 14);

/** Lets every promise chain settle (the fake store answers in microtasks). */
export async function settle(): Promise<void> {
  for (let i = 0; i < 3; i++) await new Promise((r) => setImmediate(r));
}

/** Virtual time: sleeps wait for advance(), which fires them in order. */
export class FakeClock {
  t = 0;
  private seq = 0;
  private readonly timers = new Map<number, { at: number; fire: () => void }>();

  readonly now = (): number => this.t;
  readonly wall = (): number => EPOCH + this.t;
  readonly sleep = (ms: number, signal: AbortSignal): Promise<void> =>
    new Promise((resolve) => {
      if (signal.aborted) {
        resolve();
        return;
      }
      const id = this.seq++;
      const onAbort = () => {
        this.timers.delete(id);
        resolve();
      };
      this.timers.set(id, {
        at: this.t + Math.max(0, ms),
        fire: () => {
          signal.removeEventListener('abort', onAbort);
          resolve();
        },
      });
      signal.addEventListener('abort', onAbort, { once: true });
    });

  /** Moves time forward by `ms`, firing due sleeps one at a time; `check` runs after each step. */
  async advance(ms: number, check?: () => void): Promise<void> {
    const end = this.t + ms;
    for (;;) {
      await settle();
      check?.();
      let next: [number, { at: number; fire: () => void }] | undefined;
      for (const entry of this.timers) if (!next || entry[1].at < next[1].at) next = entry;
      if (!next || next[1].at > end) break;
      this.timers.delete(next[0]);
      this.t = Math.max(this.t, next[1].at);
      next[1].fire();
    }
    this.t = end;
    await settle();
    check?.();
  }
}

/** How one process' calls behave: answered, failing (a 503), or hanging until released. */
export interface Link {
  failing: boolean;
  hanging: boolean;
}

/** One Lease in memory with the API server's optimistic concurrency. */
export class FakeLeases {
  lease: Stored<Lease> | undefined;
  private rv = 0;
  /** Every successful write, in order. */
  readonly writes: { by: string; spec: Lease['spec'] }[] = [];
  private readonly hung: (() => void)[] = [];

  private store(lease: Lease, by: string): Stored<Lease> {
    this.rv += 1;
    this.lease = structuredClone({
      ...lease,
      metadata: {
        ...lease.metadata,
        name: NAME,
        namespace: NS,
        uid: this.lease?.metadata.uid ?? 'uid-1',
        creationTimestamp: this.lease?.metadata.creationTimestamp ?? '2026-12-01T14:00:00Z',
        resourceVersion: String(this.rv),
      },
    });
    this.writes.push({ by, spec: structuredClone(lease.spec) });
    return structuredClone(this.lease);
  }

  /** Another party writes the Lease (e.g. a takeover this test plays by hand). */
  force(spec: Lease['spec'], by = 'test'): void {
    this.store({ metadata: { name: NAME }, spec }, by);
  }

  /** Runs the calls that hung; they land now, as a late request would. */
  releaseHung(): void {
    for (const run of this.hung.splice(0)) run();
  }

  port(by: string, link: Link): LeasePort {
    const through = <T>(op: () => T): Promise<T> => {
      if (link.failing) {
        return Promise.reject(
          new KubeApiError({ status: 503, reason: 'ServiceUnavailable', message: 'down', transient: true }),
        );
      }
      if (link.hanging) {
        return new Promise((resolve, reject) =>
          this.hung.push(() => {
            try {
              resolve(op());
            } catch (e) {
              reject(e instanceof Error ? e : new Error(String(e)));
            }
          }),
        );
      }
      try {
        return Promise.resolve(op());
      } catch (e) {
        return Promise.reject(e instanceof Error ? e : new Error(String(e)));
      }
    };
    return {
      leases: {
        get: (namespace, name) => {
          expect([namespace, name]).toEqual([NS, NAME]);
          return through(() => (this.lease ? structuredClone(this.lease) : undefined));
        },
        create: (namespace, lease) => {
          expect([namespace, lease.metadata.name]).toEqual([NS, NAME]);
          return through(() => {
            if (this.lease) throw new AlreadyExistsError({ message: 'leases "x" already exists' });
            return this.store(lease, by);
          });
        },
        replace: (namespace, lease) => {
          expect([namespace, lease.metadata.name]).toEqual([NS, NAME]);
          return through(() => {
            if (!this.lease)
              throw new KubeApiError({ status: 404, reason: 'NotFound', message: 'gone', transient: false });
            const rv = lease.metadata.resourceVersion;
            if (rv !== undefined && rv !== this.lease.metadata.resourceVersion) {
              throw new ConflictError({ message: 'the object has been modified' });
            }
            return this.store(lease, by);
          });
        },
      },
    };
  }
}

export type Event = { at: number; who: string; what: 'started' | 'stopped'; token?: number };

export interface Candidate {
  elector: LeaderElector;
  link: Link;
  events: Event[];
}

export function candidate(
  leases: FakeLeases,
  clock: FakeClock,
  identity: string,
  events: Event[],
  options: Partial<LeaderElectorOptions> = {},
): Candidate {
  const link: Link = { failing: false, hanging: false };
  const elector = new LeaderElector({
    kube: leases.port(identity, link),
    namespace: NS,
    name: NAME,
    identity,
    now: clock.now,
    wallClock: clock.wall,
    sleep: clock.sleep,
    acquireJitter: 0,
    onStartedLeading: (token) => events.push({ at: clock.t, who: identity, what: 'started', token }),
    onStoppedLeading: () => {
      events.push({ at: clock.t, who: identity, what: 'stopped' });
    },
    ...options,
  });
  return { elector, link, events };
}

export function setup(...identities: string[]) {
  const clock = new FakeClock();
  const leases = new FakeLeases();
  const events: Event[] = [];
  const cs = identities.map((id) => candidate(leases, clock, id, events));
  const atMostOneLeader = () => {
    const leaders = cs.filter((c) => c.elector.isLeader()).map((c) => c.elector.identity);
    expect(leaders.length).toBeLessThanOrEqual(1);
  };
  return { clock, leases, events, cs, atMostOneLeader };
}

export const MICRO_TIME = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$/;
