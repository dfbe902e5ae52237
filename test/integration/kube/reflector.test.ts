/**
 * The reflector against the simulated cluster over real HTTP, through `ClientNodeKubernetes`: objects
 * appear and go, a cut watch resumes from its resourceVersion (no relist, no event lost), a compaction
 * (410) costs exactly one relist after which it holds what the cluster holds, a failing server is
 * retried with back-off until it recovers, and a paged list of 2,000 objects.
 *
 * Cluster changes that must fall between a cut and the re-watch go straight to the simulator's store, in
 * the same tick as the cut; everything the reflector does goes over HTTP.
 */
import { CoreV1Api, KubeConfig, type V1Pod } from '@kubernetes/client-node';
import {
  ClientNodeKubernetes,
  type HeldVersion,
  type KubeApiError,
  type KubeCallReport,
  Reflector,
  type ReflectorState,
  type SyncReason,
  loadKubeConfig,
} from '@opi/kube';
import type { Pod } from '@opi/kube-objects';
import { type Simulator, startSimulator } from '@opi/kube-sim';
import { eventually } from '../../support/eventually.js';

const NS = 'reflector-it';
const SELECTOR = 'app=refl';

interface Proj {
  rv: HeldVersion;
  phase: string | undefined;
}

let sim: Simulator;
let kube: ClientNodeKubernetes;
let core: CoreV1Api;
let calls: KubeCallReport[];
const reflectors: Reflector<'pods', Proj>[] = [];

beforeEach(async () => {
  // No controllers: pods stay as written, so the cluster only changes when a test changes it.
  sim = await startSimulator({ seed: 11, controllers: false, namespaces: [NS], bookmarkIntervalMs: 500 });
  calls = [];
  kube = new ClientNodeKubernetes(loadKubeConfig({ kubeconfigYaml: sim.kubeconfig() }), {
    onCall: (c) => calls.push(c),
  });
  const kc = new KubeConfig();
  kc.loadFromString(sim.kubeconfig());
  core = kc.makeApiClient(CoreV1Api);
});

afterEach(async () => {
  await Promise.all(reflectors.splice(0).map((r) => r.stop()));
  kube.close();
  await sim.close();
});

// --- the reflector under test, and what it reported ----------------------------------------------------

interface Recorded {
  reflector: Reflector<'pods', Proj>;
  upserts: string[];
  deletes: string[];
  synced: SyncReason[];
  relists: SyncReason[];
  restarts: string[];
  errors: { error: unknown; source: string; retryInMs?: number | undefined }[];
  states: ReflectorState[];
}

function reflect(): Recorded {
  const rec: Omit<Recorded, 'reflector'> = {
    upserts: [],
    deletes: [],
    synced: [],
    relists: [],
    restarts: [],
    errors: [],
    states: [],
  };
  const reflector = new Reflector<'pods', Proj>({
    kube,
    resource: 'pods',
    namespace: NS,
    labelSelector: SELECTOR,
    project: (p, rv) => ({ rv, phase: p.status?.phase }),
    handler: {
      onUpsert: (key) => rec.upserts.push(key),
      onDelete: (key) => rec.deletes.push(key),
      onSynced: (reason) => rec.synced.push(reason),
    },
    observer: {
      onRelist: (reason) => rec.relists.push(reason),
      onWatchRestart: (reason) => rec.restarts.push(reason),
      onError: (error, info) => rec.errors.push({ error, source: info.source, retryInMs: info.retryInMs }),
      onStateChange: (state) => rec.states.push(state),
    },
  });
  reflectors.push(reflector);
  return { reflector, ...rec };
}

// --- the cluster ---------------------------------------------------------------------------------------

const podType = () => sim.store.registry.get('', 'pods');

function podBody(name: string, app = 'refl'): Pod {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, namespace: NS, labels: { app } },
    spec: { containers: [{ name: 'app', image: 'registry.example/app:1' }] },
  };
}

/** The same pod as client-node's model, for creating it over HTTP. */
function v1Pod(name: string, app = 'refl'): V1Pod {
  return {
    metadata: { name, labels: { app } },
    spec: { containers: [{ name: 'app', image: 'registry.example/app:1' }] },
  };
}

/** Straight into the simulator's store: synchronous, so it can fall between a cut and the re-watch. */
const store = {
  create(name: string, app = 'refl'): void {
    sim.store.create(podType(), podBody(name, app) as never);
  },
  delete(name: string): void {
    sim.store.delete(podType(), NS, name);
  },
  /** A new resourceVersion for the pod, with `labels` merged in. */
  change(name: string, labels: Record<string, string> = {}): void {
    const o = sim.store.get(podType(), NS, name)!;
    sim.store.replace(podType(), {
      ...o,
      metadata: {
        ...o.metadata,
        labels: { ...o.metadata.labels, ...labels },
        annotations: { ...o.metadata.annotations, touched: `${Date.now()}-${Math.random()}` },
      },
    });
  },
};

/** What the cluster holds for the selector: key → resourceVersion. */
function clusterState(): [string, string][] {
  return sim.store
    .all(podType(), NS)
    .filter((p) => p.metadata.labels?.['app'] === 'refl')
    .map((p): [string, string] => [`${NS}/${p.metadata.name}`, p.metadata.resourceVersion])
    .sort(([a], [b]) => a.localeCompare(b));
}

function heldState(r: Reflector<'pods', Proj>): [string, string][] {
  return [...r.entries()]
    .map(([k, v]): [string, string] => [k, String(v.rv)])
    .sort(([a], [b]) => a.localeCompare(b));
}

async function inStep(r: Reflector<'pods', Proj>, what: string, timeoutMs = 20_000): Promise<void> {
  await eventually(
    async () => JSON.stringify(heldState(r)) === JSON.stringify(clusterState()),
    what,
    timeoutMs,
  );
}

/** Waits until the watch is live: a probe pod created now shows up. */
async function watching(r: Reflector<'pods', Proj>, probe: string): Promise<void> {
  store.create(probe);
  await eventually(async () => r.get(`${NS}/${probe}`) !== undefined, `probe ${probe} seen`);
}

async function admin(method: string, path: string, body?: unknown): Promise<unknown> {
  const res = await fetch(`${sim.httpUrl}${path}`, {
    method,
    headers: { authorization: `Bearer ${sim.token}`, 'content-type': 'application/json' },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  expect(res.status).toBe(200);
  return res.json();
}

const podLists = () => calls.filter((c) => c.verb === 'list' && c.resource === 'pods');
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

// --- the tests -----------------------------------------------------------------------------------------

describe('reflector over the simulated cluster', () => {
  it('lists, then sees pods created, relabelled and deleted', async () => {
    for (const name of ['a', 'b', 'c']) await core.createNamespacedPod({ namespace: NS, body: v1Pod(name) });
    await core.createNamespacedPod({ namespace: NS, body: v1Pod('other', 'someone-else') });
    const rec = reflect();
    rec.reflector.start();
    await rec.reflector.synced;
    expect(rec.synced).toEqual(['start']);
    expect(rec.upserts.sort()).toEqual([`${NS}/a`, `${NS}/b`, `${NS}/c`]);
    expect(rec.reflector.size).toBe(3);
    expect(rec.reflector.get(`${NS}/other`)).toBeUndefined();

    await core.createNamespacedPod({ namespace: NS, body: v1Pod('d') });
    await eventually(async () => rec.reflector.get(`${NS}/d`), 'pod d seen');
    await core.deleteNamespacedPod({ namespace: NS, name: 'a' });
    await eventually(async () => rec.reflector.get(`${NS}/a`) === undefined, 'pod a gone');
    expect(rec.deletes).toEqual([`${NS}/a`]);
    // Relabelled out of the selector: the watch says DELETED.
    store.change('b', { app: 'moved' });
    await eventually(async () => rec.reflector.get(`${NS}/b`) === undefined, 'pod b relabelled away');
    await inStep(rec.reflector, 'the reflector holds what the cluster holds');
    expect(rec.reflector.state).toBe('watching');
    expect(rec.reflector.lastEventAt).toBeDefined();
    expect(rec.relists).toEqual(['start']);
    expect(podLists()).toHaveLength(1);
    expect(rec.errors).toEqual([]);
  });

  it('resumes a cut watch from its resourceVersion: no relist and no event lost', async () => {
    for (const name of ['a', 'b', 'c', 'd']) store.create(name);
    const rec = reflect();
    rec.reflector.start();
    await rec.reflector.synced;
    await watching(rec.reflector, 'probe-1');

    // Through the admin endpoint, then changes right after it.
    expect(await admin('POST', '/sim/watches/cut')).toEqual({ cut: 1 });
    store.create('e');
    store.delete('a');
    store.change('b');
    await inStep(rec.reflector, 'in step after the first cut');

    // In-process, so that the changes surely fall between the cut and the re-watch.
    await watching(rec.reflector, 'probe-2');
    expect(sim.faults.cutWatches()).toBe(1);
    store.create('f');
    store.delete('c');
    store.change('d');
    store.change('e', { app: 'moved' });
    await inStep(rec.reflector, 'in step after the second cut');
    await watching(rec.reflector, 'probe-3');

    expect(rec.relists).toEqual(['start']);
    expect(podLists()).toHaveLength(1);
    expect(rec.restarts.filter((r) => r === 'closed').length).toBeGreaterThanOrEqual(2);
    expect(rec.restarts).not.toContain('expired');
    expect(rec.deletes.sort()).toEqual([`${NS}/a`, `${NS}/c`, `${NS}/e`]);
  });

  it('advances its resourceVersion on bookmarks while nothing it selects changes', async () => {
    store.create('a');
    const rec = reflect();
    rec.reflector.start();
    await rec.reflector.synced;
    await watching(rec.reflector, 'probe');
    const seenAt = rec.reflector.lastEventAt;
    store.create('not-mine', 'other');
    await eventually(
      async () => rec.reflector.resourceVersion === sim.store.resourceVersion,
      'a bookmark at the latest version',
    );
    expect(rec.reflector.lastEventAt).toBeGreaterThan(seenAt!);
    expect(rec.reflector.get(`${NS}/not-mine`)).toBeUndefined();
    expect(rec.upserts).not.toContain(`${NS}/not-mine`);
  });

  it('relists exactly once after a compaction (410) and ends equal to the cluster', async () => {
    for (const name of ['keep-1', 'keep-2', 'change-1', 'change-2', 'gone-1', 'gone-2', 'away']) {
      store.create(name);
    }
    const rec = reflect();
    rec.reflector.start();
    await rec.reflector.synced;
    await watching(rec.reflector, 'probe');
    rec.upserts.length = 0;

    // The watch misses these, and the history that would replay them is forgotten.
    sim.faults.cutWatches();
    store.change('change-1');
    store.change('change-2');
    store.delete('gone-1');
    store.delete('gone-2');
    store.change('away', { app: 'moved' });
    store.create('new-1');
    store.create('new-2');
    sim.store.compact();

    await eventually(async () => rec.synced.includes('expired'), 'the relist after 410');
    await inStep(rec.reflector, 'in step after the relist');
    // Only what changed was reported; the unchanged pods (keep-*, probe) were not re-emitted.
    expect(rec.upserts.sort()).toEqual([`${NS}/change-1`, `${NS}/change-2`, `${NS}/new-1`, `${NS}/new-2`]);
    expect(rec.deletes.sort()).toEqual([`${NS}/away`, `${NS}/gone-1`, `${NS}/gone-2`]);
    expect(rec.restarts).toContain('expired');

    // It watches again from the relist's version: later changes arrive, and no further relist happens.
    await watching(rec.reflector, 'probe-after');
    await sleep(1500);
    expect(rec.relists).toEqual(['start', 'expired']);
    expect(rec.synced).toEqual(['start', 'expired']);
    expect(podLists()).toHaveLength(2);
    expect(rec.errors).toEqual([]);
  });

  it('relists once when a watch outage outlasted the history (admin endpoints only)', async () => {
    store.create('a');
    store.create('c');
    const rec = reflect();
    rec.reflector.start();
    await rec.reflector.synced;
    await watching(rec.reflector, 'probe');

    await admin('PUT', '/sim/faults', {
      errorRate: 1,
      errorCodes: [503],
      verbs: ['watch'],
      resources: ['pods'],
    });
    await admin('POST', '/sim/watches/cut');
    await eventually(async () => rec.errors.length >= 1, 'a refused watch');
    store.delete('a');
    store.create('b');
    await admin('POST', '/sim/compact');
    await admin('DELETE', '/sim/faults');

    await inStep(rec.reflector, 'in step after the outage');
    expect(rec.relists).toEqual(['start', 'expired']);
    expect(rec.deletes).toEqual([`${NS}/a`]);
    expect(rec.restarts).toContain('expired');
  });

  it('backs off while the server fails, then recovers without a relist', async () => {
    store.create('a');
    const rec = reflect();
    rec.reflector.start();
    await rec.reflector.synced;
    await watching(rec.reflector, 'probe');

    sim.faults.set({ errorRate: 1, errorCodes: [503], verbs: ['watch', 'list'], resources: ['pods'] });
    sim.faults.cutWatches();
    store.create('b');
    store.delete('a');
    await eventually(async () => rec.errors.length >= 2, 'two failed watches', 15_000);
    expect(rec.reflector.state).toBe('backoff');
    expect(rec.states).toContain('backoff');
    const [first, second] = rec.errors;
    expect(first!.source).toBe('watch');
    expect((first!.error as KubeApiError).status).toBe(503);
    // 0.8 s × [1, 1.5), but never under the server's Retry-After of 1 s; then 1.6 s × [1, 1.5).
    expect(first!.retryInMs).toBeGreaterThanOrEqual(1000);
    expect(first!.retryInMs).toBeLessThan(1200);
    expect(second!.retryInMs).toBeGreaterThanOrEqual(1600);
    expect(second!.retryInMs).toBeLessThan(2400);
    expect(rec.reflector.get(`${NS}/b`)).toBeUndefined();

    sim.faults.reset();
    await inStep(rec.reflector, 'in step after the recovery', 15_000);
    await eventually(async () => rec.reflector.state === 'watching', 'watching again');
    expect(rec.relists).toEqual(['start']);
    expect(rec.restarts.filter((r) => r === 'error').length).toBeGreaterThanOrEqual(2);
  });

  it('retries a failed first list with back-off until it succeeds', async () => {
    store.create('a');
    sim.faults.set({ errorRate: 1, errorCodes: [500], verbs: ['list'], resources: ['pods'] });
    const rec = reflect();
    rec.reflector.start();
    await eventually(async () => rec.errors.length >= 1, 'a failed list');
    expect(rec.errors[0]!.source).toBe('list');
    expect(rec.reflector.hasSynced).toBe(false);
    sim.faults.reset();
    await rec.reflector.synced;
    expect(rec.reflector.get(`${NS}/a`)).toBeDefined();
    expect(rec.synced).toEqual(['start']);
  });

  it('applies a paged list of 2,000 pods, then watches', async () => {
    for (let i = 0; i < 2000; i++) store.create(`p-${String(i).padStart(4, '0')}`);
    store.create('not-mine', 'other');
    const rec = reflect();
    const started = Date.now();
    rec.reflector.start();
    await rec.reflector.synced;
    expect(rec.reflector.size).toBe(2000);
    expect(rec.upserts).toHaveLength(2000);
    expect(rec.synced).toEqual(['start']);
    // Pages of 500 (the default): four requests.
    expect(podLists()).toHaveLength(4);
    expect(Date.now() - started).toBeLessThan(15_000);
    await watching(rec.reflector, 'probe');
    await inStep(rec.reflector, 'in step');
  });

  it('relists on request, resolving once the list is applied', async () => {
    store.create('a');
    const rec = reflect();
    rec.reflector.start();
    await rec.reflector.synced;
    await watching(rec.reflector, 'probe');
    await rec.reflector.relist('test');
    expect(rec.synced).toEqual(['start', 'requested']);
    expect(podLists()).toHaveLength(2);
    await watching(rec.reflector, 'probe-2');
  });

  it('stops promptly, closing its watch', async () => {
    const rec = reflect();
    rec.reflector.start();
    await rec.reflector.synced;
    await watching(rec.reflector, 'probe');
    await rec.reflector.stop();
    expect(rec.reflector.state).toBe('stopped');
    await eventually(
      async () => ((await admin('GET', '/sim/stats')) as { watches: number }).watches === 0,
      'the server sees no watch',
    );
  });
});
