/**
 * Leader election on a coordination.k8s.io/v1 Lease, with client-go's semantics (tools/leaderelection):
 * one process of many holds the Lease and renews it; the others take it over only after they have seen
 * its record unchanged for a whole lease duration on their own clock, so clock skew between processes
 * does not matter, only their clocks' rates.
 *
 * The leader's term is identified by a fencing token, the Lease's `leaseTransitions` after it took the
 * Lease: every acquisition raises it by one under a resourceVersion precondition, so tokens strictly
 * increase across terms. Whatever the leader writes elsewhere carries the token, and the store refuses a
 * token lower than one it has seen: a leader that was paused (SIGSTOP, a long GC) or cut off past its
 * lease cannot overwrite its successor's state, even though it learns it was deposed only later.
 *
 * Caveat: a Lease deleted and created again starts over at 0 transitions, lower than the fence a store
 * kept; the store then refuses the new leader until its fence is reset (the cache writer's claim says so).
 *
 * Uses the port only (its `leases` client: `get`, `create`, `replace`).
 */
import { createOrGet } from '../port/create-or-get.js';
import { ConflictError } from '../port/errors.js';
import type { Stored } from '../port/objects.js';
import type { Lease } from '@opi/kube-objects';
import type { KubernetesPort } from '../port/port.js';

/** The part of the port the elector needs. */
export type LeasePort = Pick<KubernetesPort, 'leases'>;

/** What the elector was doing when a call failed (for logs). */
export type LeaderElectionPhase = 'acquire' | 'renew' | 'release' | 'callback';

export interface LeaderElectorOptions {
  kube: LeasePort;
  namespace: string;
  /** The Lease's name. */
  name: string;
  /** Unique per process (e.g. hostname, pid and a random suffix): the Lease's holderIdentity. */
  identity: string;
  /** How long others wait, after they last saw the Lease change, before taking it over. Default 15 s. */
  leaseDurationMs?: number;
  /** The leader steps down when no renewal succeeded for this long. Default 10 s; below leaseDurationMs. */
  renewDeadlineMs?: number;
  /** Between two attempts to acquire or renew. Default 2 s. */
  retryPeriodMs?: number;
  /**
   * Attempts to acquire are spread over retryPeriod × [1, 1 + acquireJitter] (client-go's JitterFactor
   * 1.2), so processes started together do not all call at once. Default 1.2; 0 for none.
   */
  acquireJitter?: number;
  /**
   * Called once this process leads, with the term's fencing token and a signal aborted when the term ends
   * (just before onStoppedLeading). It should start the leader's work and return.
   */
  onStartedLeading(token: number, signal: AbortSignal): void;
  /**
   * Called once per term when it ends: the renew deadline passed, a renewal found another holder, or
   * stop(). The elector awaits it before it tries to acquire again, so a term's work has stopped before
   * the next term of this process starts.
   */
  onStoppedLeading(): void | Promise<void>;
  /** Called when the observed holder changes ('' when the Lease was released or is absent). */
  onNewHolder?(identity: string): void;
  /** A failed call to the API server or an exception from a callback; the elector carries on. */
  onError?(err: unknown, phase: LeaderElectionPhase): void;
  /** Monotonic milliseconds, for intervals (default performance.now). */
  now?: () => number;
  /** Wall-clock milliseconds since the epoch, for the Lease's times (default Date.now). */
  wallClock?: () => number;
  /** Resolves after `ms`, or at once when `signal` aborts; never rejects (default: a timer). */
  sleep?: (ms: number, signal: AbortSignal) => Promise<void>;
  /** In [0, 1), for the jitter (default Math.random). */
  random?: () => number;
}

export const DEFAULT_LEASE_DURATION_MS = 15_000;
export const DEFAULT_RENEW_DEADLINE_MS = 10_000;
export const DEFAULT_RETRY_PERIOD_MS = 2_000;
export const DEFAULT_ACQUIRE_JITTER = 1.2;

/** A Kubernetes MicroTime: RFC 3339 in UTC with microseconds, e.g. 2026-12-01T14:00:00.000000Z. */
export function microTime(epochMs: number): string {
  return new Date(epochMs).toISOString().replace(/\.(\d{3})Z$/, '.$1000Z');
}

function defaultSleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) {
      resolve();
      return;
    }
    const done = () => {
      clearTimeout(timer);
      signal.removeEventListener('abort', done);
      resolve();
    };
    const timer = setTimeout(done, Math.max(0, ms));
    // The elector alone never keeps a process alive.
    timer.unref();
    signal.addEventListener('abort', done, { once: true });
  });
}

/** What the elector compares to tell whether the holder is still renewing (client-go's observedRecord). */
function recordOf(lease: Stored<Lease>): string {
  const s = lease.spec ?? {};
  return JSON.stringify([
    lease.metadata.resourceVersion,
    s.holderIdentity ?? '',
    s.renewTime ?? '',
    s.acquireTime ?? '',
    s.leaseTransitions ?? 0,
    s.leaseDurationSeconds ?? 0,
  ]);
}

const ABANDONED = Symbol('abandoned');
const TIMED_OUT = Symbol('timed out');

interface Term {
  token: number;
  /** The Lease as this term last wrote it (its resourceVersion is the next write's precondition). */
  lease: Stored<Lease>;
  /** When (our clock) the last successful write of the Lease was sent. */
  renewedAt: number;
  ended: AbortController;
}

export class LeaderElector {
  private readonly kube: LeasePort;
  private readonly namespace: string;
  private readonly name: string;
  readonly identity: string;
  private readonly leaseDurationMs: number;
  private readonly renewDeadlineMs: number;
  private readonly retryPeriodMs: number;
  private readonly acquireJitter: number;
  private readonly now: () => number;
  private readonly wallClock: () => number;
  private readonly sleep: (ms: number, signal: AbortSignal) => Promise<void>;
  private readonly random: () => number;

  private readonly stopping = new AbortController();
  private loop: Promise<void> | undefined;
  private stopped: Promise<void> | undefined;

  /** The last record read or written, and when (our clock) it was first seen as it is. */
  private observedRecord = '';
  private observedAt = 0;
  private holder = '';

  /** The current term, while leading. */
  private term: Term | undefined;
  /** The end of the last term (onStoppedLeading), which the next term and a release wait for. */
  private ending: Promise<void> = Promise.resolve();

  constructor(private readonly options: LeaderElectorOptions) {
    this.kube = options.kube;
    this.namespace = options.namespace;
    this.name = options.name;
    this.identity = options.identity;
    this.leaseDurationMs = options.leaseDurationMs ?? DEFAULT_LEASE_DURATION_MS;
    this.renewDeadlineMs = options.renewDeadlineMs ?? DEFAULT_RENEW_DEADLINE_MS;
    this.retryPeriodMs = options.retryPeriodMs ?? DEFAULT_RETRY_PERIOD_MS;
    this.acquireJitter = options.acquireJitter ?? DEFAULT_ACQUIRE_JITTER;
    this.now = options.now ?? (() => performance.now());
    this.wallClock = options.wallClock ?? Date.now;
    this.sleep = options.sleep ?? defaultSleep;
    this.random = options.random ?? Math.random;
    if (!this.identity) throw new RangeError('identity must not be empty');
    if (!(this.retryPeriodMs > 0)) throw new RangeError('retryPeriodMs must be > 0');
    // client-go's checks: the leader must give up before others may take over, with room for retries.
    if (!(this.renewDeadlineMs < this.leaseDurationMs)) {
      throw new RangeError('renewDeadlineMs must be below leaseDurationMs');
    }
    if (!(this.retryPeriodMs < this.renewDeadlineMs)) {
      throw new RangeError('retryPeriodMs must be below renewDeadlineMs');
    }
  }

  /** Starts trying to acquire the Lease (once; later calls do nothing). */
  start(): void {
    if (this.loop || this.stopping.signal.aborted) return;
    this.loop = this.run();
  }

  /**
   * Stops for good. A leader ends its term at once (onStoppedLeading, awaited) and then releases the Lease
   * (holder cleared, duration 1 s, like client-go's ReleaseOnCancel) so another process takes over now
   * rather than after a lease duration. A renewal in flight is waited for (at most the renew deadline),
   * an attempt to acquire for at most a retry period.
   */
  stop(): Promise<void> {
    this.stopped ??= this.shutdown();
    return this.stopped;
  }

  /**
   * Whether this process leads now: it holds a term and its last successful renewal is within the renew
   * deadline on our clock. The second part makes a process that was frozen (SIGSTOP) answer false as soon
   * as it runs again, before its timers have fired.
   */
  isLeader(): boolean {
    return this.term !== undefined && this.now() - this.term.renewedAt < this.renewDeadlineMs;
  }

  /** The current term's fencing token, or undefined when not leading (see isLeader). */
  get token(): number | undefined {
    return this.isLeader() ? this.term?.token : undefined;
  }

  /** The holder the Lease named when last read or written; undefined when none (released, absent, not read). */
  observedHolder(): string | undefined {
    return this.holder || undefined;
  }

  // --- the loop -------------------------------------------------------------------------------------

  private async run(): Promise<void> {
    const stop = this.stopping.signal;
    /** The Lease as we last wrote it while we hold it: what stop() releases. */
    let held: Stored<Lease> | undefined;
    while (!stop.aborted) {
      const acquired = await this.call(this.tryAcquire(), 'acquire', this.retryPeriodMs);
      if (acquired === undefined || acquired === ABANDONED) {
        if (stop.aborted) break;
        const jitter = this.acquireJitter > 0 ? this.random() * this.acquireJitter : 0;
        await this.sleep(this.retryPeriodMs * (1 + jitter), stop);
        continue;
      }
      held = acquired.lease;
      // Acquired while stopping: release it without ever leading.
      if (stop.aborted) break;
      // The call took so long that the term would be over already: take the Lease again (a new term)
      // rather than lead for no time.
      if (this.now() - acquired.sentAt >= this.renewDeadlineMs) continue;
      // The previous term of this process has ended (its callback returned) before a new one starts.
      await this.ending;
      const term = this.lead(acquired);
      await this.renewUntilLost(term);
      held = term.lease;
      if (stop.aborted) break;
      // Deposed or past the deadline: we no longer count on holding the Lease.
      held = undefined;
      await this.endTerm();
    }
    await this.endTerm();
    if (held) await this.release(held);
  }

  private lead({ lease, token, sentAt }: { lease: Stored<Lease>; token: number; sentAt: number }): Term {
    const term: Term = { token, lease, renewedAt: sentAt, ended: new AbortController() };
    this.term = term;
    try {
      this.options.onStartedLeading(token, term.ended.signal);
    } catch (err) {
      this.report(err, 'callback');
    }
    return term;
  }

  /**
   * Renews every retry period until the renew deadline passes without a success, a renewal finds the
   * Lease taken, or stop().
   */
  private async renewUntilLost(term: Term): Promise<void> {
    const stop = this.stopping.signal;
    for (;;) {
      // Wake at the deadline at the latest, so a leader whose renewals keep failing steps down on time.
      const wait = Math.min(this.retryPeriodMs, term.renewedAt + this.renewDeadlineMs - this.now());
      await this.sleep(Math.max(0, wait), stop);
      if (stop.aborted || this.term !== term) return;
      const left = term.renewedAt + this.renewDeadlineMs - this.now();
      // Also the way out for a process that was frozen past its deadline: it steps down writing nothing.
      if (left <= 0) return;
      const sentAt = this.now();
      // A renewal that hangs must not keep us leading past the deadline: it races the time left (and is
      // waited for on stop(), so the release that follows writes over the latest resourceVersion).
      const deadline = new AbortController();
      const outcome = await Promise.race([
        this.call(this.tryRenew(term.lease, term.token), 'renew'),
        this.sleep(left, deadline.signal).then((): typeof TIMED_OUT => TIMED_OUT),
      ]);
      deadline.abort();
      if (outcome === TIMED_OUT || outcome === 'lost') return;
      if (outcome !== undefined && outcome !== ABANDONED) {
        term.lease = outcome;
        term.renewedAt = sentAt;
      }
      // undefined: the call failed; try again after the period while the deadline allows.
    }
  }

  /** Ends the current term, if any: aborts its signal and runs onStoppedLeading (once). */
  private endTerm(): Promise<void> {
    const term = this.term;
    if (!term) return this.ending;
    this.term = undefined;
    term.ended.abort();
    this.ending = (async () => {
      try {
        await this.options.onStoppedLeading();
      } catch (err) {
        this.report(err, 'callback');
      }
    })();
    return this.ending;
  }

  private async shutdown(): Promise<void> {
    this.stopping.abort();
    // The leader's work stops now, before the Lease is released: its writes must end before a successor
    // starts (they would be fenced all the same, but need not be refused).
    await this.endTerm();
    await this.loop;
  }

  /**
   * Awaits an API call; a failure goes to onError and reads as undefined. With `abandonAfterMs`, once
   * stop() was called the call is waited for that much longer at most, then abandoned.
   */
  private async call<T>(
    call: Promise<T>,
    phase: LeaderElectionPhase,
    abandonAfterMs?: number,
  ): Promise<T | typeof ABANDONED | undefined> {
    const racers: Promise<T | typeof ABANDONED>[] = [call];
    const done = new AbortController();
    if (abandonAfterMs !== undefined) racers.push(this.abandonAfterStop(abandonAfterMs, done.signal));
    try {
      return await Promise.race(racers);
    } catch (err) {
      this.report(err, phase);
      return undefined;
    } finally {
      done.abort();
      // An abandoned call may still fail: nobody waits for it any more.
      call.catch(() => undefined);
    }
  }

  /** Resolves `abandonAfterMs` after stop() (or at once when `cancel` aborts: the call settled). */
  private async abandonAfterStop(abandonAfterMs: number, cancel: AbortSignal): Promise<typeof ABANDONED> {
    const stop = this.stopping.signal;
    await new Promise<void>((resolve) => {
      if (stop.aborted || cancel.aborted) {
        resolve();
        return;
      }
      const done = () => {
        stop.removeEventListener('abort', done);
        cancel.removeEventListener('abort', done);
        resolve();
      };
      stop.addEventListener('abort', done, { once: true });
      cancel.addEventListener('abort', done, { once: true });
    });
    await this.sleep(abandonAfterMs, cancel);
    return ABANDONED;
  }

  /** Hands an error to onError; an exception from onError itself must not end the loop. */
  private report(err: unknown, phase: LeaderElectionPhase): void {
    try {
      this.options.onError?.(err, phase);
    } catch {
      // Nothing left to tell.
    }
  }

  // --- one attempt --------------------------------------------------------------------------------------

  /** Remembers what was read, restarting the expiry clock whenever the record changed. */
  private observe(lease: Stored<Lease>, at: number): void {
    const record = recordOf(lease);
    if (record !== this.observedRecord) {
      this.observedRecord = record;
      this.observedAt = at;
    }
    const holder = lease.spec?.holderIdentity ?? '';
    if (holder !== this.holder) {
      this.holder = holder;
      try {
        this.options.onNewHolder?.(holder);
      } catch (err) {
        this.report(err, 'callback');
      }
    }
  }

  private spec(transitions: number, acquireTime: string, renewTime: string): NonNullable<Lease['spec']> {
    return {
      holderIdentity: this.identity,
      leaseDurationSeconds: Math.ceil(this.leaseDurationMs / 1000),
      acquireTime,
      renewTime,
      leaseTransitions: transitions,
    };
  }

  /**
   * One attempt to take the Lease: creates it when absent (transitions 0), takes it over when free
   * (released) or expired, and answers the term's lease and token; undefined when someone else holds it
   * or won the race for it.
   */
  private async tryAcquire(): Promise<{ lease: Stored<Lease>; token: number; sentAt: number } | undefined> {
    const sentAt = this.now();
    const current = await this.kube.leases.get(this.namespace, this.name);
    if (this.stopping.signal.aborted) return undefined;
    const stamp = microTime(this.wallClock());
    if (!current) {
      const made = await createOrGet(() =>
        this.kube.leases.create(this.namespace, {
          apiVersion: 'coordination.k8s.io/v1',
          kind: 'Lease',
          metadata: { name: this.name, namespace: this.namespace },
          spec: this.spec(0, stamp, stamp),
        }),
      );
      // Another process created it first: read it on the next attempt.
      if (!made.created) return undefined;
      this.observe(made.object, this.now());
      return { lease: made.object, token: 0, sentAt };
    }
    this.observe(current, this.now());
    const holder = current.spec?.holderIdentity ?? '';
    // Trust the longer of our duration and the one the holder declared (whole seconds).
    const duration = Math.max(this.leaseDurationMs, (current.spec?.leaseDurationSeconds ?? 0) * 1000);
    if (holder !== '' && holder !== this.identity && this.now() - this.observedAt < duration) {
      return undefined;
    }
    // Expired, released (holder ''), or ours from an earlier term (a step-down, a restart with the same
    // identity): every acquisition is a new term, so the transitions, hence the token, always go up, even
    // when client-go would keep them for a holder taking back its own Lease.
    const token = (current.spec?.leaseTransitions ?? 0) + 1;
    try {
      const replaced = await this.kube.leases.replace(this.namespace, {
        ...current,
        spec: { ...current.spec, ...this.spec(token, stamp, stamp) },
      });
      this.observe(replaced, this.now());
      return { lease: replaced, token, sentAt };
    } catch (err) {
      // Someone else wrote it since we read it (most likely took it over): lost the race.
      if (err instanceof ConflictError) return undefined;
      throw err;
    }
  }

  /**
   * One renewal: answers the renewed lease, 'lost' when the Lease names another holder or term, or throws.
   * It writes over the lease as last written (its resourceVersion), and on a conflict re-reads it once.
   */
  private async tryRenew(last: Stored<Lease>, token: number): Promise<Stored<Lease> | 'lost'> {
    let base = last;
    for (let attempt = 0; ; attempt++) {
      if (base.spec?.holderIdentity !== this.identity || (base.spec?.leaseTransitions ?? 0) !== token) {
        return 'lost';
      }
      const stamp = microTime(this.wallClock());
      try {
        const renewed = await this.kube.leases.replace(this.namespace, {
          ...base,
          spec: {
            ...base.spec,
            renewTime: stamp,
            leaseDurationSeconds: Math.ceil(this.leaseDurationMs / 1000),
          },
        });
        this.observe(renewed, this.now());
        return renewed;
      } catch (err) {
        if (!(err instanceof ConflictError) || attempt > 0) throw err;
      }
      const read = await this.kube.leases.get(this.namespace, this.name);
      if (!read) return 'lost';
      this.observe(read, this.now());
      base = read;
    }
  }

  /** Clears the holder so the next candidate need not wait; a conflict means someone already took it. */
  private async release(last: Stored<Lease>): Promise<void> {
    const stamp = microTime(this.wallClock());
    try {
      const released = await this.kube.leases.replace(this.namespace, {
        ...last,
        spec: {
          ...last.spec,
          holderIdentity: '',
          leaseDurationSeconds: 1,
          acquireTime: stamp,
          renewTime: stamp,
        },
      });
      this.observe(released, this.now());
    } catch (err) {
      if (!(err instanceof ConflictError)) this.report(err, 'release');
    }
  }
}
