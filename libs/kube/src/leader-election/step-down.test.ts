/** When a leader stops leading: a missed renew deadline, a hung renewal, a frozen process, another holder, stop(). */
import { describe, expect, it } from '@jest/globals';
import {
  type Candidate,
  EPOCH,
  FakeClock,
  FakeLeases,
  NAME,
  NS,
  settle,
  setup,
} from './leader-election.fixture.js';
import { LeaderElector, microTime } from './leader-election.js';

describe('LeaderElector: stepping down and stopping', () => {
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
});
