import { describe, expect, it } from '@jest/globals';
import { AlreadyExistsError, ConflictError, KubeApiError } from './errors.js';
import { LeaderElector, type LeaderElectorOptions, type LeasePort, microTime } from './leader-election.js';
import type { Lease, Stored } from './objects.js';

const NS = 'opi-system';
const NAME = 'opi-cache-writer';
const EPOCH = Date.UTC(2026, 11, 1, 14);

/** Lets every promise chain settle (the fake store answers in microtasks). */
async function settle(): Promise<void> {
  for (let i = 0; i < 3; i++) await new Promise((r) => setImmediate(r));
}

/** Virtual time: sleeps wait for advance(), which fires them in order. */
class FakeClock {
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
interface Link {
  failing: boolean;
  hanging: boolean;
}

/** One Lease in memory with the API server's optimistic concurrency. */
class FakeLeases {
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
      getLease: (namespace, name) => {
        expect([namespace, name]).toEqual([NS, NAME]);
        return through(() => (this.lease ? structuredClone(this.lease) : undefined));
      },
      createLease: (namespace, lease) => {
        expect([namespace, lease.metadata.name]).toEqual([NS, NAME]);
        return through(() => {
          if (this.lease) throw new AlreadyExistsError({ message: 'leases "x" already exists' });
          return this.store(lease, by);
        });
      },
      replaceLease: (namespace, lease) => {
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
    };
  }
}

type Event = { at: number; who: string; what: 'started' | 'stopped'; token?: number };

interface Candidate {
  elector: LeaderElector;
  link: Link;
  events: Event[];
}

function candidate(
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

function setup(...identities: string[]) {
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

const MICRO_TIME = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$/;

describe('microTime', () => {
  it('writes RFC 3339 in UTC with microseconds', () => {
    expect(microTime(Date.UTC(2026, 11, 1, 14, 0, 0, 123))).toBe('2026-12-01T14:00:00.123000Z');
  });
});

describe('LeaderElector', () => {
  it('creates an absent Lease and leads with token 0, then renews every retry period', async () => {
    const { clock, leases, events, cs } = setup('a');
    const a = cs[0]!.elector;
    a.start();
    await clock.advance(0);
    expect(a.isLeader()).toBe(true);
    expect(a.token).toBe(0);
    expect(a.observedHolder()).toBe('a');
    expect(events).toEqual([{ at: 0, who: 'a', what: 'started', token: 0 }]);
    expect(leases.lease?.spec).toEqual({
      holderIdentity: 'a',
      leaseDurationSeconds: 15,
      acquireTime: '2026-12-01T14:00:00.000000Z',
      renewTime: '2026-12-01T14:00:00.000000Z',
      leaseTransitions: 0,
    });
    expect(leases.lease?.spec?.renewTime).toMatch(MICRO_TIME);

    await clock.advance(2000);
    expect(leases.lease?.spec?.renewTime).toBe('2026-12-01T14:00:02.000000Z');
    expect(leases.lease?.spec?.acquireTime).toBe('2026-12-01T14:00:00.000000Z');
    expect(leases.lease?.spec?.leaseTransitions).toBe(0);
    await clock.advance(60_000);
    expect(a.isLeader()).toBe(true);
    expect(leases.writes).toHaveLength(1 + 31);
    await a.stop();
  });

  it('does not take a Lease another holder keeps renewing', async () => {
    const { clock, events, cs, atMostOneLeader } = setup('a', 'b');
    const [a, b] = cs.map((c) => c.elector) as [LeaderElector, LeaderElector];
    a.start();
    await clock.advance(0);
    b.start();
    await clock.advance(120_000, atMostOneLeader);
    expect(a.isLeader()).toBe(true);
    expect(b.isLeader()).toBe(false);
    expect(b.token).toBeUndefined();
    expect(b.observedHolder()).toBe('a');
    expect(events.map((e) => e.who)).toEqual(['a']);
    await Promise.all([a.stop(), b.stop()]);
  });

  it('takes over a Lease unchanged for a lease duration on its own clock, with transitions + 1', async () => {
    const { clock, leases, events, cs, atMostOneLeader } = setup('a', 'b');
    const [ca, cb] = cs as [Candidate, Candidate];
    ca.elector.start();
    await clock.advance(0);
    // The holder's clock is far off: only the record's changes count, never the times it holds.
    leases.force({ ...leases.lease!.spec, renewTime: '2031-01-01T00:00:00.000000Z' }, 'a');
    ca.link.failing = true; // a cut off from the API server from now on
    const seenAt = clock.t;
    cb.elector.start();
    await clock.advance(14_000, atMostOneLeader);
    expect(cb.elector.isLeader()).toBe(false);
    // a gave up at its renew deadline (10 s after its last renewal, at 0 s).
    expect(events).toEqual([
      { at: 0, who: 'a', what: 'started', token: 0 },
      { at: 10_000, who: 'a', what: 'stopped' },
    ]);
    await clock.advance(4000, atMostOneLeader);
    expect(cb.elector.isLeader()).toBe(true);
    expect(cb.elector.token).toBe(1);
    const started = events.find((e) => e.who === 'b');
    expect(started?.token).toBe(1);
    expect(started!.at - seenAt).toBeGreaterThanOrEqual(15_000);
    expect(started!.at - seenAt).toBeLessThanOrEqual(15_000 + 2000);
    expect(leases.lease?.spec).toMatchObject({ holderIdentity: 'b', leaseTransitions: 1 });
    expect(leases.lease?.spec?.acquireTime).toBe(microTime(EPOCH + started!.at));

    // a comes back, finds b holding the Lease, and stays a follower.
    ca.link.failing = false;
    await clock.advance(30_000, atMostOneLeader);
    expect(ca.elector.isLeader()).toBe(false);
    expect(ca.elector.observedHolder()).toBe('b');
    await Promise.all([ca.elector.stop(), cb.elector.stop()]);
  });

  it('steps down when no renewal succeeds within the renew deadline, then starts a new term', async () => {
    const { clock, leases, events, cs } = setup('a');
    const { elector: a, link } = cs[0]!;
    a.start();
    await clock.advance(0);
    link.failing = true;
    await clock.advance(9_999);
    expect(a.isLeader()).toBe(true); // the last renewal was sent at 0: 10 s until the deadline
    expect(events).toHaveLength(1);
    await clock.advance(1);
    expect(events).toEqual([
      { at: 0, who: 'a', what: 'started', token: 0 },
      { at: 10_000, who: 'a', what: 'stopped' },
    ]);
    expect(a.isLeader()).toBe(false);
    expect(a.token).toBeUndefined();

    // Back: the Lease still names a, yet a new term takes a new token (transitions + 1).
    link.failing = false;
    await clock.advance(2000);
    expect(a.isLeader()).toBe(true);
    expect(a.token).toBe(1);
    expect(events.at(-1)).toMatchObject({ who: 'a', what: 'started', token: 1 });
    expect(leases.lease?.spec).toMatchObject({ holderIdentity: 'a', leaseTransitions: 1 });
    await a.stop();
  });

  it('steps down at the deadline even while a renewal hangs, and sees itself deposed', async () => {
    const { clock, leases, events, cs, atMostOneLeader } = setup('a', 'b');
    const [ca, cb] = cs as [Candidate, Candidate];
    ca.elector.start();
    await clock.advance(0);
    cb.elector.start();
    await clock.advance(4000, atMostOneLeader);
    ca.link.hanging = true; // a's requests from now on get no answer (a partition, a frozen peer)
    await clock.advance(20_000, atMostOneLeader);
    expect(events.filter((e) => e.who === 'a').map((e) => [e.what, e.at])).toEqual([
      ['started', 0],
      ['stopped', 14_000], // last renewal sent at 4 s, deadline 10 s
    ]);
    expect(cb.elector.isLeader()).toBe(true);
    expect(cb.elector.token).toBe(1);
    // a's hung calls land late: its stale renewal is refused (resourceVersion), and a sees b.
    ca.link.hanging = false;
    leases.releaseHung();
    await clock.advance(4000, atMostOneLeader);
    expect(leases.lease?.spec?.holderIdentity).toBe('b');
    expect(ca.elector.isLeader()).toBe(false);
    expect(ca.elector.observedHolder()).toBe('b');
    await Promise.all([ca.elector.stop(), cb.elector.stop()]);
  });

  it('answers not leader at once when its process was frozen past the deadline, and never renews that term', async () => {
    const { clock, leases, events, cs } = setup('a');
    const a = cs[0]!.elector;
    a.start();
    await clock.advance(0);
    const writes = leases.writes.length;
    clock.t += 30_000; // SIGSTOP: time passes, no timer fires
    expect(a.isLeader()).toBe(false);
    expect(a.token).toBeUndefined();
    await clock.advance(0); // SIGCONT: the overdue timer fires
    // It stepped down without writing, then took its own Lease again as a new term (token 1).
    expect(events).toEqual([
      { at: 0, who: 'a', what: 'started', token: 0 },
      { at: 30_000, who: 'a', what: 'stopped' },
      { at: 30_000, who: 'a', what: 'started', token: 1 },
    ]);
    expect(leases.writes.slice(writes).map((w) => w.spec?.leaseTransitions)).toEqual([1]);
    await a.stop();
  });

  it('steps down when a renewal finds another holder', async () => {
    const { clock, leases, events, cs } = setup('a');
    const a = cs[0]!.elector;
    a.start();
    await clock.advance(0);
    leases.force({ ...leases.lease!.spec, holderIdentity: 'x', leaseTransitions: 1 });
    await clock.advance(2000);
    expect(events.map((e) => e.what)).toEqual(['started', 'stopped']);
    expect(a.isLeader()).toBe(false);
    expect(a.observedHolder()).toBe('x');
    expect(leases.lease?.spec?.holderIdentity).toBe('x');
    await a.stop();
    expect(leases.lease?.spec?.holderIdentity).toBe('x'); // nothing released: it was not ours
  });

  it('on stop, ends the term, then releases the Lease so another takes over at once', async () => {
    const { clock, leases, events, cs, atMostOneLeader } = setup('a', 'b');
    const [a, b] = cs.map((c) => c.elector) as [LeaderElector, LeaderElector];
    a.start();
    await clock.advance(0);
    b.start();
    await clock.advance(5000, atMostOneLeader);
    const writes = leases.writes.length;
    const stopping = a.stop();
    await clock.advance(0);
    await stopping;
    expect(events.filter((e) => e.who === 'a').map((e) => e.what)).toEqual(['started', 'stopped']);
    expect(leases.writes[writes]).toEqual({
      by: 'a',
      spec: {
        holderIdentity: '',
        leaseDurationSeconds: 1,
        acquireTime: microTime(EPOCH + 5000),
        renewTime: microTime(EPOCH + 5000),
        leaseTransitions: 0,
      },
    });
    expect(a.isLeader()).toBe(false);
    // b's next attempt (one retry period later) takes it, long before a lease duration.
    await clock.advance(2000, atMostOneLeader);
    expect(b.isLeader()).toBe(true);
    expect(b.token).toBe(1);
    expect(events.at(-1)).toMatchObject({ who: 'b', what: 'started', token: 1, at: 6000 });
    expect(leases.lease?.spec).toMatchObject({ holderIdentity: 'b', leaseTransitions: 1 });
    await b.stop();
  });

  it('calls onStoppedLeading before the release is written, and aborts the term signal', async () => {
    const clock = new FakeClock();
    const leases = new FakeLeases();
    const log: string[] = [];
    let signal: AbortSignal | undefined;
    const a = new LeaderElector({
      kube: leases.port('a', { failing: false, hanging: false }),
      namespace: NS,
      name: NAME,
      identity: 'a',
      now: clock.now,
      wallClock: clock.wall,
      sleep: clock.sleep,
      onStartedLeading: (token, s) => {
        signal = s;
        log.push(`started ${token}`);
      },
      onStoppedLeading: async () => {
        log.push(`stopping, aborted=${signal?.aborted}`);
        await settle();
        log.push(`stopped, holder=${leases.lease?.spec?.holderIdentity}`);
      },
    });
    a.start();
    await clock.advance(0);
    const stopping = a.stop();
    await clock.advance(0);
    await stopping;
    expect(log).toEqual(['started 0', 'stopping, aborted=true', 'stopped, holder=a']);
    expect(leases.lease?.spec?.holderIdentity).toBe('');
  });

  it('lets exactly one of two candidates create an absent Lease (AlreadyExists is a lost race)', async () => {
    const { clock, leases, events, cs, atMostOneLeader } = setup('a', 'b');
    for (const c of cs) c.elector.start();
    await clock.advance(0, atMostOneLeader);
    await clock.advance(30_000, atMostOneLeader);
    expect(events.filter((e) => e.what === 'started')).toHaveLength(1);
    expect(cs.filter((c) => c.elector.isLeader())).toHaveLength(1);
    expect(leases.lease?.spec?.leaseTransitions).toBe(0);
    await Promise.all(cs.map((c) => c.elector.stop()));
  });

  it.each([1, 2, 3, 4, 5, 6])(
    'never has two leaders at once while links fail at random (seed %i)',
    async (s) => {
      const ids = ['a', 'b', 'c'];
      const { clock, leases, events, cs, atMostOneLeader } = setup(...ids);
      let seed = s;
      const rand = () => {
        seed = (seed * 1103515245 + 12345) % 2 ** 31;
        return seed / 2 ** 31;
      };
      for (const c of cs) c.elector.start();
      const tokens: number[] = [];
      for (let step = 0; step < 400; step++) {
        // Each link now and then changes to answering, failing or hanging, and stays so for a while.
        for (const c of cs) {
          if (rand() > 0.15) continue;
          const r = rand();
          c.link.failing = r < 0.25;
          c.link.hanging = r >= 0.25 && r < 0.5;
        }
        if (rand() < 0.3) leases.releaseHung();
        await clock.advance(Math.floor(rand() * 3000), atMostOneLeader);
      }
      for (const e of events) if (e.what === 'started') tokens.push(e.token!);
      // Every term has a new, higher token, and the Lease changed hands.
      expect(tokens.length).toBeGreaterThan(5);
      expect(new Set(events.map((e) => e.who)).size).toBe(3);
      expect(tokens).toEqual([...tokens].sort((x, y) => x - y));
      expect(new Set(tokens).size).toBe(tokens.length);
      // A term starts only after the previous one ended (by the clock).
      const open = new Set<string>();
      for (const e of events) {
        if (e.what === 'started') {
          expect(open.size).toBe(0);
          open.add(e.who);
        } else open.delete(e.who);
      }
      for (const c of cs) c.link.hanging = c.link.failing = false;
      leases.releaseHung();
      await Promise.all(cs.map((c) => c.elector.stop()));
    },
  );

  it('does not write when stopped as a follower, and abandons a hung attempt after a retry period', async () => {
    const { clock, leases, events, cs } = setup('a', 'b');
    const [ca, cb] = cs as [Candidate, Candidate];
    ca.elector.start();
    await clock.advance(0);
    cb.elector.start();
    await clock.advance(1000);
    const writes = leases.writes.length;
    cb.link.hanging = true;
    await clock.advance(2000); // b's next attempt hangs
    let done = false;
    const stopping = cb.elector.stop().then(() => (done = true));
    await clock.advance(1999);
    expect(done).toBe(false);
    await clock.advance(1);
    await stopping;
    expect(done).toBe(true);
    expect(events.filter((e) => e.who === 'b')).toEqual([]);
    expect(leases.writes.slice(writes).every((w) => w.by === 'a')).toBe(true);
    await ca.elector.stop();
  });

  it('reports failed calls to onError and keeps trying', async () => {
    const clock = new FakeClock();
    const leases = new FakeLeases();
    const link: Link = { failing: true, hanging: false };
    const errors: string[] = [];
    const a = new LeaderElector({
      kube: leases.port('a', link),
      namespace: NS,
      name: NAME,
      identity: 'a',
      now: clock.now,
      wallClock: clock.wall,
      sleep: clock.sleep,
      random: () => 0.5,
      onStartedLeading: () => undefined,
      onStoppedLeading: () => undefined,
      onError: (err, phase) => errors.push(`${phase}: ${err instanceof Error ? err.message : String(err)}`),
    });
    a.start();
    await clock.advance(0);
    await clock.advance(3199); // jitter 1.2 × 0.5: every 3.2 s
    expect(errors).toEqual(['acquire: down']);
    await clock.advance(1);
    expect(errors).toEqual(['acquire: down', 'acquire: down']);
    link.failing = false;
    await clock.advance(3200);
    expect(a.isLeader()).toBe(true);
    await a.stop();
  });

  it('refuses settings where the leader could outlive its lease', () => {
    const base = {
      kube: new FakeLeases().port('a', { failing: false, hanging: false }),
      namespace: NS,
      name: NAME,
      identity: 'a',
      onStartedLeading: () => undefined,
      onStoppedLeading: () => undefined,
    };
    expect(() => new LeaderElector({ ...base, leaseDurationMs: 10_000, renewDeadlineMs: 10_000 })).toThrow(
      RangeError,
    );
    expect(() => new LeaderElector({ ...base, renewDeadlineMs: 2000, retryPeriodMs: 2000 })).toThrow(
      RangeError,
    );
    expect(() => new LeaderElector({ ...base, identity: '' })).toThrow(RangeError);
  });
});
