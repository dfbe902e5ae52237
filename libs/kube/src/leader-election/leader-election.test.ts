/** The leader election: taking an absent or lapsed Lease, renewing it, one leader of many, its settings. */
import { describe, expect, it } from '@jest/globals';
import {
  type Candidate,
  EPOCH,
  FakeClock,
  FakeLeases,
  type Link,
  MICRO_TIME,
  NAME,
  NS,
  setup,
} from './leader-election.fixture.js';
import { LeaderElector, microTime } from './leader-election.js';

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
