/**
 * Leader election on a Lease of the simulated cluster, over client-node and real HTTP, with short
 * durations: one of two candidates leads; a stopped leader hands over at once; a leader whose calls stall
 * (a frozen process, a partition) steps down at its renew deadline, loses the Lease to the other after
 * the lease duration, and when it comes back sees itself deposed, its late writes to the cache fenced off.
 */
import { randomUUID } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { ClientNodeKubernetes, LeaderElector, type LeasePort, loadKubeConfig } from '@opi/kube';
import { FAST_BEHAVIOUR, type Simulator, startSimulator } from '@opi/kube-sim';
import { CacheWriter, FencedOffError } from '@opi/state';
import { eventually } from '../../support/eventually.js';
import { deletePrefix } from '../../support/redis-keys.js';

const NS = 'leader-election';
const LEASE_MS = 1500;
const RENEW_DEADLINE_MS = 1000;
const RETRY_MS = 200;
const MICRO_TIME = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$/;

let sim: Simulator;
let dir: string;
let kube: ClientNodeKubernetes;
let redis: Redis;
const prefix = `test-leader-${randomUUID().slice(0, 8)}`;

beforeAll(async () => {
  sim = await startSimulator({ seed: 11, behaviour: FAST_BEHAVIOUR, namespaces: [NS] });
  dir = await mkdtemp(join(tmpdir(), 'leader-election-'));
  const file = join(dir, 'kubeconfig');
  await sim.writeKubeconfig(file);
  kube = new ClientNodeKubernetes(loadKubeConfig({ kubeconfigFile: file }), { requestTimeoutMs: 5000 });
  redis = new Redis(process.env['REDIS_URL'] ?? 'redis://127.0.0.1:6379');
});

afterAll(async () => {
  await deletePrefix(redis, prefix);
  redis.disconnect();
  kube.close();
  await sim.close();
  await rm(dir, { recursive: true, force: true });
});

/** A port whose Lease calls wait while paused and then go out late, as a frozen process' would. */
class Stallable implements LeasePort {
  paused = false;
  private readonly waiting: (() => void)[] = [];
  constructor(private readonly inner: LeasePort) {}

  private async gate(): Promise<void> {
    if (this.paused) await new Promise<void>((resolve) => this.waiting.push(resolve));
  }
  readonly leases: LeasePort['leases'] = {
    get: async (namespace, name) => {
      await this.gate();
      return this.inner.leases.get(namespace, name);
    },
    create: async (namespace, lease) => {
      await this.gate();
      return this.inner.leases.create(namespace, lease);
    },
    replace: async (namespace, lease) => {
      await this.gate();
      return this.inner.leases.replace(namespace, lease);
    },
  };
  resume(): void {
    this.paused = false;
    for (const resolve of this.waiting.splice(0)) resolve();
  }
}

interface Event {
  at: number;
  who: string;
  what: 'started' | 'stopped';
  token?: number;
}

/** Candidates for one Lease; their cache writers share a Redis prefix of the Lease's own. */
function candidates(lease: string, ...names: string[]) {
  const events: Event[] = [];
  const errors: string[] = [];
  const all = names.map((who) => {
    const port = new Stallable(kube);
    const writer = new CacheWriter(redis, `${prefix}:${lease}`);
    const claims: Promise<unknown>[] = [];
    const elector = new LeaderElector({
      kube: port,
      namespace: NS,
      name: lease,
      identity: `${who}-${process.pid}-${randomUUID().slice(0, 6)}`,
      leaseDurationMs: LEASE_MS,
      renewDeadlineMs: RENEW_DEADLINE_MS,
      retryPeriodMs: RETRY_MS,
      onStartedLeading: (token) => {
        events.push({ at: Date.now(), who, what: 'started', token });
        // What the cache's leader does first: raise the fence to its token.
        claims.push(writer.claim(token).catch((e: unknown) => e));
      },
      onStoppedLeading: () => {
        events.push({ at: Date.now(), who, what: 'stopped' });
      },
      onError: (err, phase) =>
        errors.push(`${who} ${phase}: ${err instanceof Error ? err.message : String(err)}`),
    });
    return { who, elector, port, writer, claims };
  });
  const leaders = () => all.filter((c) => c.elector.isLeader());
  return { all, events, errors, leaders };
}

describe('LeaderElector on the simulated cluster', () => {
  it('lets one of two lead, and a stopped leader hands over at once', async () => {
    const { all, events, errors, leaders } = candidates('cache-writer-a', 'one', 'two');
    for (const c of all) c.elector.start();
    const [first] = await eventually(async () => (leaders().length ? leaders() : undefined), 'a leader');
    const other = all.find((c) => c !== first)!;
    const lease = await kube.leases.get(NS, 'cache-writer-a');
    expect(lease?.spec).toMatchObject({
      holderIdentity: first!.elector.identity,
      leaseDurationSeconds: 2,
      leaseTransitions: 0,
    });
    expect(lease?.spec?.renewTime).toMatch(MICRO_TIME);
    expect(lease?.spec?.acquireTime).toMatch(MICRO_TIME);
    expect(first!.elector.token).toBe(0);

    // Several lease durations later: the same leader, renewing, the other following.
    const until = Date.now() + 2 * LEASE_MS;
    while (Date.now() < until) {
      expect(leaders()).toHaveLength(1);
      await new Promise((r) => setTimeout(r, 50));
    }
    expect(leaders()[0]).toBe(first);
    expect(other.elector.observedHolder()).toBe(first!.elector.identity);
    const renewed = await kube.leases.get(NS, 'cache-writer-a');
    expect(renewed?.spec?.renewTime).not.toBe(lease?.spec?.renewTime);
    expect(renewed?.spec?.leaseTransitions).toBe(0);

    const stopped = Date.now();
    await first!.elector.stop();
    const released = await kube.leases.get(NS, 'cache-writer-a');
    expect(released?.spec).toMatchObject({ holderIdentity: '', leaseDurationSeconds: 1 });
    await eventually(async () => other.elector.isLeader(), 'the other to lead', 5000, 10);
    // Well within a lease duration: it did not wait for the released Lease to expire.
    expect(Date.now() - stopped).toBeLessThan(LEASE_MS);
    expect(other.elector.token).toBe(1);
    expect((await kube.leases.get(NS, 'cache-writer-a'))?.spec).toMatchObject({
      holderIdentity: other.elector.identity,
      leaseTransitions: 1,
    });
    expect(events.map((e) => [e.who, e.what, e.token])).toEqual([
      [first!.who, 'started', 0],
      [first!.who, 'stopped', undefined],
      [other.who, 'started', 1],
    ]);
    await other.elector.stop();
    expect(errors).toEqual([]);
  });

  it('deposes a leader whose calls stall: it steps down, the other takes over after the lease, and its late writes are fenced off', async () => {
    const { all, events, leaders, errors } = candidates('cache-writer-b', 'one', 'two');
    for (const c of all) c.elector.start();
    const [stalled] = await eventually(async () => (leaders().length ? leaders() : undefined), 'a leader');
    const other = all.find((c) => c !== stalled)!;
    const oldToken = stalled!.elector.token!;
    await Promise.all(stalled!.claims);
    await stalled!.writer.putInstances(oldToken, [['pg-1', 'from the first leader']]);
    await new Promise((r) => setTimeout(r, 500));

    const pausedAt = Date.now();
    stalled!.port.paused = true;
    await eventually(async () => other.elector.isLeader(), 'the other to take over', 10_000, 10);
    const startedAt = events.find((e) => e.who === other.who && e.what === 'started')!.at;
    const steppedDownAt = events.find((e) => e.who === stalled!.who && e.what === 'stopped')!.at;
    // The stalled leader gave up at its renew deadline, before the other started (never two at once).
    expect(steppedDownAt).toBeLessThan(startedAt);
    expect(steppedDownAt - pausedAt).toBeLessThanOrEqual(RENEW_DEADLINE_MS + 300);
    expect(stalled!.elector.isLeader()).toBe(false);
    // The other waited for a whole lease duration (2 s: the Lease declares whole seconds) without change.
    expect(startedAt - pausedAt).toBeGreaterThanOrEqual(LEASE_MS);
    expect(other.elector.token).toBe(oldToken + 1);
    await Promise.all(other.claims);
    await other.writer.putInstances(oldToken + 1, [['pg-1', 'from the second leader']]);

    // The stalled one comes back: its late renewal is refused (resourceVersion), it sees the new holder,
    // and a write it still had in hand with its old token changes nothing.
    stalled!.port.resume();
    await eventually(
      async () => stalled!.elector.observedHolder() === other.elector.identity,
      'the deposed leader to see the new holder',
      5000,
      10,
    );
    expect(stalled!.elector.isLeader()).toBe(false);
    await expect(
      stalled!.writer.putInstances(oldToken, [['pg-1', 'stale, from the deposed leader']]),
    ).rejects.toBeInstanceOf(FencedOffError);
    expect(await redis.hget(other.writer.keys.instances, 'pg-1')).toBe('from the second leader');
    await new Promise((r) => setTimeout(r, 3 * RETRY_MS));
    expect(leaders()).toEqual([other]);
    expect(events.filter((e) => e.what === 'started').map((e) => [e.who, e.token])).toEqual([
      [stalled!.who, oldToken],
      [other.who, oldToken + 1],
    ]);
    await Promise.all(all.map((c) => c.elector.stop()));
    expect(errors).toEqual([]);
  });
});
