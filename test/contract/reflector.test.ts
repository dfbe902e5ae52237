/**
 * What the cache's list-then-watch reflectors rely on, through the adapter (`ClientNodeKubernetes`):
 * paged lists that are one snapshot, watches from a list's resourceVersion that miss nothing, resume,
 * 410 after a compaction (for lists and watches), bookmarks, timeoutSeconds and the client deadline,
 * cut connections, and Lease optimistic concurrency.
 *
 * Against a real API server, two cases need compactions to happen quickly and a watch served from etcd
 * rather than the watch cache (which keeps events for a while whatever etcd compacts). The realk8s
 * rig (docs/testing.md, "Real counterparts") gives both with
 *   EXTRA_APISERVER_FLAGS="--etcd-compaction-interval=10s --watch-cache-sizes=deployments.apps#0" ./start.sh
 * and the bookmark case uses Jobs, which stay in the watch cache (bookmarks come from it).
 */
import { randomBytes } from 'node:crypto';
import {
  AlreadyExistsError,
  ClientNodeKubernetes,
  ConflictError,
  KubeApiError,
  type KubeCallReport,
  type Stored,
  type WatchEvent,
  type WatchOptions,
  type Watched,
  type WatchedResource,
  loadKubeConfig,
} from '@opi/kube';
import type { Deployment, Job } from '@opi/kube-objects';
import { type TestCluster, describeSimOnly, eventually, startTestCluster } from './cluster.js';
import { type HoldProxy, startHoldProxy } from './hold-proxy.js';

let c: TestCluster;
let ns: string;
let kube: ClientNodeKubernetes;
let proxy: HoldProxy;
/** The adapter through the proxy, for cases that act between two requests of one call. */
let viaProxy: ClientNodeKubernetes;
const calls: KubeCallReport[] = [];
const proxiedCalls: KubeCallReport[] = [];

beforeAll(async () => {
  c = await startTestCluster('reflect', { controllers: false });
  ns = c.namespace;
  kube = new ClientNodeKubernetes(loadKubeConfig({ kubeconfigFile: c.kubeconfigFile }), {
    onCall: (x) => calls.push(x),
  });
  proxy = await startHoldProxy(c.kc);
  viaProxy = new ClientNodeKubernetes(loadKubeConfig({ kubeconfigYaml: proxy.kubeconfigYaml }), {
    onCall: (x) => proxiedCalls.push(x),
    // A held request waits for the cluster to compact, which takes a real server up to 20 s.
    requestTimeoutMs: 120_000,
  });
});
afterAll(async () => {
  kube.close();
  viaProxy.close();
  await proxy.close();
  await c.close();
});
afterEach(() => {
  c.sim?.faults.reset();
});

function deployment(name: string, labels: Record<string, string>): Deployment {
  return {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name, labels },
    spec: {
      replicas: 0,
      selector: { matchLabels: { app: name } },
      template: {
        metadata: { labels: { app: name } },
        spec: { containers: [{ name: 'app', image: 'registry.example/app:1' }] },
      },
    },
  };
}

function job(name: string, labels: Record<string, string>): Job {
  return {
    apiVersion: 'batch/v1',
    kind: 'Job',
    metadata: { name, labels },
    spec: {
      backoffLimit: 0,
      template: {
        metadata: { labels },
        spec: { restartPolicy: 'Never', containers: [{ name: 'task', image: 'registry.example/task:1' }] },
      },
    },
  };
}

/** Annotates a Deployment by replace, re-reading on a conflict (a controller may write it meanwhile). */
async function touch(name: string): Promise<Stored<Deployment>> {
  for (;;) {
    const d = await kube.deployments.get(ns, name);
    if (!d) throw new Error(`deployment ${name} is gone`);
    try {
      return await kube.deployments.replace(ns, {
        ...d,
        metadata: { ...d.metadata, annotations: { ...d.metadata.annotations, touched: 'yes' } },
      });
    } catch (e) {
      if (!(e instanceof ConflictError)) throw e;
    }
  }
}

interface Recording<R extends WatchedResource> {
  events: WatchEvent<Watched[R]>[];
  stop(): void;
  /** 'resolved', or what `done` rejected with. */
  settled: Promise<unknown>;
}

function record<R extends WatchedResource>(
  resource: R,
  namespace: string | undefined,
  options: WatchOptions,
  through: ClientNodeKubernetes = kube,
): Recording<R> {
  const events: WatchEvent<Watched[R]>[] = [];
  const handle = through.watch(resource, namespace, options, (e) => events.push(e));
  return {
    events,
    stop: () => {
      handle.stop();
    },
    settled: handle.done.then(
      () => 'resolved',
      (e: unknown) => e,
    ),
  };
}

function nameOf(e: WatchEvent<{ metadata: { name: string } }>): string {
  return e.type === 'ADDED' || e.type === 'MODIFIED' || e.type === 'DELETED' ? e.object.metadata.name : '';
}

function rvOf(e: WatchEvent<{ metadata: { resourceVersion: string } }>): number {
  return e.type === 'ERROR' ? NaN : Number(e.object.metadata.resourceVersion);
}

/** Resolves with what `p` settled with, or 'pending' after `ms`. */
async function within(ms: number, p: Promise<unknown>): Promise<unknown> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise((resolve) => {
    timer = setTimeout(() => {
      resolve('pending');
    }, ms);
  });
  try {
    return await Promise.race([p, late]);
  } finally {
    clearTimeout(timer);
  }
}

/** Makes the store forget its history: the simulator on request; a real server on its own schedule. */
async function compactIfSim(): Promise<void> {
  if (!c.sim) return;
  // A compaction keeps the current revision readable (as etcd's): write once so older ones go.
  await c.core.createNamespacedConfigMap({ namespace: ns, body: { metadata: { generateName: 'tick-' } } });
  c.sim.store.compact();
}

const isContinue = (u: URL): boolean => u.pathname.endsWith('/deployments') && u.searchParams.has('continue');

describe('lists and watches for a reflector', () => {
  it('lists in pages as one snapshot, and a watch from its resourceVersion misses nothing', async () => {
    const sel = 'case=paged';
    for (let i = 0; i < 5; i++)
      await kube.deployments.create(ns, deployment(`paged-${i}`, { case: 'paged' }));
    const hold = proxy.hold(isContinue);
    const listing = viaProxy.deployments.list(ns, sel, 2);
    await hold.arrived;
    // Written between the first and the second page.
    await kube.deployments.create(ns, deployment('paged-5', { case: 'paged' }));
    await touch('paged-1');
    await kube.deployments.delete(ns, 'paged-2');
    hold.release();
    const list = await listing;
    expect(list.items.map((d) => d.metadata.name)).toEqual([
      'paged-0',
      'paged-1',
      'paged-2',
      'paged-3',
      'paged-4',
    ]);
    expect(list.items[1]?.metadata.annotations?.['touched']).toBeUndefined();
    // Wire JSON, not client-node models.
    expect(typeof list.items[0]?.metadata.creationTimestamp).toBe('string');

    const cache = new Map(list.items.map((d) => [d.metadata.name, d.metadata.resourceVersion]));
    const events: WatchEvent<Stored<Deployment>>[] = [];
    const w = kube.watch(
      'deployments',
      ns,
      { resourceVersion: list.resourceVersion, labelSelector: sel },
      (e) => {
        events.push(e);
        if (e.type === 'ADDED' || e.type === 'MODIFIED')
          cache.set(e.object.metadata.name, e.object.metadata.resourceVersion);
        if (e.type === 'DELETED') cache.delete(e.object.metadata.name);
      },
    );
    try {
      await eventually(async () => {
        const now = await kube.deployments.list(ns, sel);
        const want = new Map(now.items.map((d) => [d.metadata.name, d.metadata.resourceVersion]));
        return JSON.stringify([...want].sort()) === JSON.stringify([...cache].sort());
      }, 'the list plus the watch to equal the cluster');
    } finally {
      w.stop();
      await w.done;
    }
    expect([...cache.keys()].sort()).toEqual(['paged-0', 'paged-1', 'paged-3', 'paged-4', 'paged-5']);
    expect(events.filter((e) => e.type === 'ADDED').map(nameOf)).toEqual(['paged-5']);
    expect(events.filter((e) => e.type === 'DELETED').map(nameOf)).toEqual(['paged-2']);
    const first = events[0];
    expect(first && first.type !== 'ERROR' && typeof first.object.metadata).toBe('object');
  });

  it('restarts a list whose continue token expired (410) from its first page', async () => {
    const sel = 'case=expired';
    for (let i = 0; i < 5; i++)
      await kube.deployments.create(ns, deployment(`exp-${i}`, { case: 'expired' }));
    const hold = proxy.hold(isContinue);
    const before = proxiedCalls.length;
    const listing = viaProxy.deployments.list(ns, sel, 2);
    const token = (await hold.arrived).searchParams.get('continue') ?? '';
    await compactIfSim();
    // On a real server: until a compaction passed the token's resourceVersion.
    await eventually(
      async () => {
        try {
          await c.apps.listNamespacedDeployment({
            namespace: ns,
            labelSelector: sel,
            limit: 2,
            _continue: token,
          });
          await new Promise((r) => setTimeout(r, 1000));
          return false;
        } catch (e) {
          return (e as { code?: number }).code === 410;
        }
      },
      'the continue token to expire (a real server needs a short --etcd-compaction-interval)',
      90_000,
    );
    hold.release();
    const list = await listing;
    expect(list.items.map((d) => d.metadata.name)).toEqual(['exp-0', 'exp-1', 'exp-2', 'exp-3', 'exp-4']);
    const pages = proxiedCalls.slice(before).filter((x) => x.verb === 'list');
    expect(pages.map((x) => x.status)).toEqual([200, 410, 200, 200, 200]);
  }, 120_000);

  it('resumes a watch from a resourceVersion and replays what it missed (all namespaces, by label)', async () => {
    const label = `resume-${randomBytes(3).toString('hex')}`;
    const first = await kube.deployments.create(ns, deployment('resume-a', { case: label }));
    await touch('resume-a');
    await kube.deployments.create(ns, deployment('resume-b', { case: label }));
    await kube.deployments.delete(ns, 'resume-a');
    const w = record('deployments', undefined, {
      resourceVersion: first.metadata.resourceVersion,
      labelSelector: `case=${label}`,
    });
    await eventually(async () => w.events.some((e) => e.type === 'DELETED'), 'the replayed delete');
    w.stop();
    expect(await w.settled).toBe('resolved');
    const touched = w.events.findIndex(
      (e) => e.type === 'MODIFIED' && e.object.metadata.annotations?.['touched'] === 'yes',
    );
    const added = w.events.findIndex((e) => e.type === 'ADDED' && nameOf(e) === 'resume-b');
    const deleted = w.events.findIndex((e) => e.type === 'DELETED' && nameOf(e) === 'resume-a');
    expect([touched >= 0, added > touched, deleted > added]).toEqual([true, true, true]);
    // From the create's resourceVersion: the create itself is not replayed.
    expect(w.events.some((e) => e.type === 'ADDED' && nameOf(e) === 'resume-a')).toBe(false);
    const rvs = w.events.map(rvOf);
    expect(rvs).toEqual([...rvs].sort((a, b) => a - b));
    expect(
      w.events.every(
        (e) => e.type !== 'ERROR' && e.type !== 'BOOKMARK' && e.object.metadata.namespace === ns,
      ),
    ).toBe(true);
  });

  it('sends BOOKMARK events with a resourceVersion when asked, before timeoutSeconds ends the stream', async () => {
    // A real 1.20 server sends them every minute and 2 s before the stream's deadline, from the watch cache.
    await kube.jobs.create(ns, job('bookmarked', { case: 'bookmark' }));
    const list = await kube.jobs.list(ns, 'case=bookmark');
    const w = record('jobs', ns, {
      resourceVersion: list.resourceVersion,
      labelSelector: 'case=bookmark',
      allowWatchBookmarks: true,
      timeoutSeconds: 5,
    });
    expect(await within(15_000, w.settled)).toBe('resolved');
    const marks = w.events.filter((e) => e.type === 'BOOKMARK');
    expect(marks.length).toBeGreaterThan(0);
    for (const m of marks) expect(rvOf(m)).toBeGreaterThanOrEqual(Number(list.resourceVersion));
  });

  it('answers a resourceVersion too old with 410, as an ERROR event or a refused watch', async () => {
    const old = await kube.deployments.create(ns, deployment('old', { case: 'old' }));
    await touch('old');
    await compactIfSim();
    const how = await eventually(
      async () => {
        const w = record('deployments', ns, {
          resourceVersion: old.metadata.resourceVersion,
          timeoutSeconds: 2,
        });
        const end = await w.settled;
        const error = w.events.find((e) => e.type === 'ERROR');
        if (error?.type === 'ERROR')
          return error.object.code === 410 ? `ERROR event ${error.object.reason}` : false;
        return end instanceof KubeApiError && end.status === 410 ? 'HTTP 410' : false;
      },
      'a 410 (a real server needs a compaction and a watch served from etcd; see the top of this file)',
      90_000,
    );
    expect(how).toMatch(/^(ERROR event (Expired|Gone)|HTTP 410)$/);
  }, 120_000);

  it('ends the stream after timeoutSeconds: done resolves, and the watch is reported once', async () => {
    const list = await kube.pods.list(ns);
    const before = calls.length;
    const started = Date.now();
    const w = record('pods', ns, { resourceVersion: list.resourceVersion, timeoutSeconds: 1 });
    expect(await within(10_000, w.settled)).toBe('resolved');
    expect(Date.now() - started).toBeGreaterThanOrEqual(900);
    const reports = calls.slice(before).filter((x) => x.verb === 'watch');
    expect(reports).toEqual([expect.objectContaining({ verb: 'watch', resource: 'pods', status: 200 })]);
    expect(reports[0]?.durationMs).toBeGreaterThanOrEqual(900);
  });

  it('aborts a silent stream at the client deadline: done rejects with a transient Timeout', async () => {
    const list = await kube.jobs.list(ns, 'case=silent');
    const started = Date.now();
    const w = record('jobs', ns, {
      resourceVersion: list.resourceVersion,
      labelSelector: 'case=silent',
      deadlineMs: 500,
    });
    const end = await within(5_000, w.settled);
    expect(end).toBeInstanceOf(KubeApiError);
    expect(end).toMatchObject({ status: undefined, reason: 'Timeout', transient: true });
    expect(Date.now() - started).toBeLessThan(3_000);
  });

  it('settles promptly when the connection is cut: a transient network failure', async () => {
    // Without a resourceVersion the stream begins with the Deployments that exist: then it is open.
    const w = record('deployments', ns, {}, viaProxy);
    await eventually(async () => w.events.length > 0, 'the watch to be open');
    expect(proxy.cutAll()).toBeGreaterThan(0);
    const end = await within(2_000, w.settled);
    expect(end).toBeInstanceOf(KubeApiError);
    expect(end).toMatchObject({ status: undefined, transient: true });
  });

  it('ends with what onEvent threw', async () => {
    const boom = new Error('the cache refused the event');
    const h = kube.watch('deployments', ns, {}, () => {
      throw boom;
    });
    expect(
      await within(
        5_000,
        h.done.catch((e: unknown) => e),
      ),
    ).toBe(boom);
  });
});

describe('leases', () => {
  it('creates, reads and replaces a Lease; a stale resourceVersion is a Conflict', async () => {
    const name = `writer-${randomBytes(3).toString('hex')}`;
    expect(await kube.leases.get(ns, name)).toBeUndefined();
    // MicroTime: RFC 3339 with exactly six fractional digits.
    const renewTime = '2026-12-01T10:00:00.123456Z';
    const spec = { holderIdentity: 'worker-1', leaseDurationSeconds: 15, renewTime, leaseTransitions: 0 };
    const created = await kube.leases.create(ns, { metadata: { name }, spec });
    expect(created.spec).toEqual(spec);
    expect(await kube.leases.get(ns, name)).toEqual(created);
    const err = await kube.leases.create(ns, { metadata: { name }, spec }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(AlreadyExistsError);
    const taken = await kube.leases.replace(ns, {
      ...created,
      spec: { ...spec, holderIdentity: 'worker-2', leaseTransitions: 1 },
    });
    expect(taken.spec?.holderIdentity).toBe('worker-2');
    // Worker 1 renews from the version it read: too late.
    const stale = await kube.leases.replace(ns, created).catch((e: unknown) => e);
    expect(stale).toBeInstanceOf(ConflictError);
    expect(stale).toMatchObject({ status: 409, transient: true });
    expect((await kube.leases.get(ns, name))?.spec?.holderIdentity).toBe('worker-2');
  });
});

describeSimOnly('simulator only: refused and cut watches', () => {
  it('rejects done with the HTTP status of a refused watch', async () => {
    c.sim!.faults.set({ verbs: ['watch'], errorRate: 1, errorCodes: [403] });
    expect(await record('pods', ns, {}).settled).toMatchObject({
      status: 403,
      reason: 'Forbidden',
      transient: false,
    });
    c.sim!.faults.set({ errorCodes: [503], retryAfterSeconds: 2 });
    expect(await record('pods', ns, {}).settled).toMatchObject({
      status: 503,
      transient: true,
      retryAfterSeconds: 2,
    });
    c.sim!.faults.set({ errorRate: 0, dropRate: 1 });
    expect(await record('pods', ns, {}).settled).toMatchObject({ status: undefined, transient: true });
  });

  it('resolves done when the server cuts the stream (POST /sim/watches/cut)', async () => {
    const w = record('deployments', ns, {});
    await eventually(async () => w.events.length > 0, 'the watch to be open');
    const res = await fetch(`${c.sim!.httpUrl}/sim/watches/cut`, {
      method: 'POST',
      headers: { authorization: `Bearer ${c.sim!.token}` },
    });
    expect(res.status).toBe(200);
    expect(await within(2_000, w.settled)).toBe('resolved');
  });
});
