/**
 * The worker handlers against real Redis (StateStore, JobProducer, BullMQ) and the in-memory Kubernetes
 * fake: what converge, stop-instance and the sync leave in the cluster and in Redis, in any order of
 * requests, with concurrent runs, injected API failures, and a Redis that lost records.
 */
import { randomUUID } from 'node:crypto';
import type { Job } from 'bullmq';
import type { Redis } from 'ioredis';
import type { DesiredLrp } from '@opi/domain';
import {
  type Deployment,
  type FakeFailure,
  FakeKubernetes,
  KubeApiError,
  type KubeObject,
  type KubernetesPort,
  type Pod,
  type Select,
  type Stored,
} from '@opi/kube';
import { createLogger } from '@opi/logging';
import { JobProducer, QUEUE_NAMES, workerConnection } from '@opi/queue';
import { CacheWriter, StateStore, TaskStore } from '@opi/state';
import {
  ANNOTATION_DESIRED_LRP,
  ANNOTATION_LAST_UPDATED,
  DOCKER_CONFIG_JSON_KEY,
  ANNOTATION_GENERATION,
  credentialsFromDockerConfig,
  labelsFor,
  lrpToDeployment,
  lrpToStatefulSet,
  registrySecretName,
  workloadName,
  type WorkloadKind,
  WORKLOAD_KINDS,
} from '@opi/translation';
import {
  type HandlerDeps,
  type RunningWorkers,
  convergeLrp,
  startWorkers,
  ClusterCache,
  type ClusterView,
  type SyncReport,
  onJobChanged,
  syncCluster,
} from '../../apps/worker/src/index.js';
import { stopInstance } from '../../apps/worker/src/handlers/stop-instance.js';
import { OTHER_KIND, workloadVerbs } from '../../apps/worker/src/handlers/workload-verbs.js';
import { sampleLrp } from '../../libs/translation/src/lrp.fixture.js';
import { UNSCHEDULABLE } from '../../libs/translation/src/pod.fixture.js';
import { eventually } from '../support/eventually.js';
import { CallbackClient } from '@opi/callbacks';

const REDIS_URL = process.env['REDIS_URL'] ?? 'redis://127.0.0.1:6379';
/** Every key of this file starts with `${BASE}-`; each test has its own prefix below it. */
const BASE = `test-worker-${randomUUID().slice(0, 8)}`;
const NS = 'cf-workloads';
const RUN_AS_NON_ROOT = true;
const SYNC_LOCK_TTL_MS = 60_000;
const PASSWORD = 's3cr:et';

let redis: Redis;
let seq = 0;
const producers: JobProducer[] = [];
const logger = createLogger({ level: 'silent', pretty: false });

interface Env {
  prefix: string;
  kube: FakeKubernetes;
  store: StateStore;
  producer: JobProducer;
  deps: HandlerDeps;
}

function newEnv(kube: FakeKubernetes = new FakeKubernetes()): Env {
  seq += 1;
  const prefix = `${BASE}-${seq}`;
  kube.addNamespace(NS);
  const store = new StateStore(redis, prefix);
  const producer = new JobProducer({ connection: redis, prefix, attempts: 2 });
  producers.push(producer);
  const deps: HandlerDeps = {
    store,
    kube,
    producer,
    logger,
    runAsNonRoot: RUN_AS_NON_ROOT,
    syncNamespace: undefined,
    tasks: new TaskStore(redis, prefix),
    callbacks: new CallbackClient(),
    ccInternalUrl: undefined,
    staging: { recipeImage: 'registry.example/stager:1', insecureRegistries: [] },
    finishedJobTtlSeconds: 600,
  };
  return { prefix, kube, store, producer, deps };
}

beforeAll(() => {
  redis = workerConnection(REDIS_URL);
});

afterAll(async () => {
  for (const p of producers) {
    for (const q of Object.values(p.queues)) await q.obliterate({ force: true });
    await p.close();
  }
  let cursor = '0';
  do {
    const [next, found] = await redis.scan(cursor, 'MATCH', `${BASE}-*`, 'COUNT', 1000);
    cursor = next;
    if (found.length) await redis.del(...found);
  } while (cursor !== '0');
  await redis.quit();
});

// --- helpers -----------------------------------------------------------------------------------------------

/**
 * One sync as the cache writer runs it: the cluster watched (a ClusterCache over the env's port, its
 * first list applied and written), then syncCluster from that view. Stops the watch afterwards.
 */
async function syncWatched(e: Env, lockTtlMs: number, slowMs = 0): Promise<SyncReport | undefined> {
  const token = 1;
  const writer = new CacheWriter(redis, e.prefix);
  await writer.claim(token);
  const cache = new ClusterCache(
    {
      kube: e.deps.kube,
      store: e.store,
      writer,
      logger,
      namespace: e.deps.syncNamespace,
      homeNamespace: NS,
      reportCrashes: e.deps.ccInternalUrl ? e.producer : undefined,
      onJob: async (job, pods) => {
        await onJobChanged(e.deps, job, pods);
      },
    },
    token,
  );
  cache.start();
  try {
    await cache.settled();
    // A slow sync: its cache rewrite takes slowMs.
    const view: ClusterView = {
      workloads: () => cache.workloads(),
      jobs: () => cache.jobs(),
      podsOfJob: (ns, name) => cache.podsOfJob(ns, name),
      rewriteInstances: async () => {
        await new Promise((r) => setTimeout(r, slowMs));
        return cache.rewriteInstances();
      },
    };
    const report = await syncCluster(e.deps, view, lockTtlMs);
    await cache.settled();
    return report;
  } finally {
    await cache.stop();
  }
}

/** A complete LRP of its own (fresh guid and version), in NS. */
function newLrp(overrides: Partial<DesiredLrp> = {}): DesiredLrp {
  const guid = randomUUID();
  const version = randomUUID();
  return sampleLrp({ processGuid: `${guid}-${version}`, guid, version, ...overrides });
}

const deploymentOf = (e: Env, lrp: DesiredLrp) => e.kube.getDeployment(NS, workloadName(lrp));
/** The LRP's workload of the kind its env's mode makes. */
const workloadOf = (e: Env, lrp: DesiredLrp) =>
  workloadVerbs(e.kube, e.deps.workloadKind ?? 'deployment').get(NS, workloadName(lrp));
/** An env whose new LRPs run as `kind`. */
function modeEnv(kind: WorkloadKind): Env {
  const e = newEnv();
  e.deps = { ...e.deps, workloadKind: kind, instanceIndexEnv: true };
  return e;
}
const secretOf = (e: Env, lrp: DesiredLrp) => e.kube.getSecret(NS, registrySecretName(lrp));
const pdbOf = (e: Env, lrp: DesiredLrp) => e.kube.getPodDisruptionBudget(NS, workloadName(lrp));

/** What the fake holds in NS: names of every LRP-related object. */
function names(
  e: Env,
  resource: 'deployments' | 'statefulsets' | 'secrets' | 'poddisruptionbudgets' | 'pods',
): string[] {
  return e.kube.objects(resource, NS).map((o) => o.metadata.name);
}

async function desireAndConverge(e: Env, lrp: DesiredLrp): Promise<number> {
  const { generation } = await e.store.desire(lrp);
  await convergeLrp(e.deps, lrp.processGuid);
  return generation;
}

/** GET /apps as CC reads it: process guid → annotation. */
async function schedulingInfos(store: StateStore): Promise<Map<string, string>> {
  const body = JSON.parse(await store.schedulingInfosBody()) as {
    desired_lrp_scheduling_infos: {
      desired_lrp_key: { process_guid: string };
      guid: string;
      version: string;
      annotation: string;
    }[];
  };
  return new Map(
    body.desired_lrp_scheduling_infos.map((s) => [s.desired_lrp_key.process_guid, s.annotation]),
  );
}

/** The process guids of converge jobs waiting in the LRP queue. */
async function pendingConverges(producer: JobProducer): Promise<string[]> {
  const jobs = await producer.queues[QUEUE_NAMES.lrp].getJobs(['waiting', 'prioritized', 'delayed']);
  return jobs
    .filter((j) => j.name === 'converge-lrp')
    .map((j) => (j.data as { processGuid: string }).processGuid)
    .sort();
}

const T0 = Date.UTC(2024, 4, 1, 10, 0, 0);
const at = (seconds: number) => new Date(T0 + seconds * 1000).toISOString().replace(/\.\d{3}Z$/, 'Z');

/** A pod of the LRP as its ReplicaSet and the kubelet would leave it. */
function pod(lrp: DesiredLrp, name: string, createdAt: number, kind: 'running' | 'unschedulable'): Pod {
  const template = lrpToDeployment(lrp, { runAsNonRoot: RUN_AS_NON_ROOT }).spec.template;
  const metadata = {
    name,
    labels: { ...labelsFor(lrp), 'pod-template-hash': '5d8f7c9b4' },
    ...(template.metadata?.annotations ? { annotations: template.metadata.annotations } : {}),
    creationTimestamp: at(createdAt),
  };
  if (kind === 'unschedulable') {
    return {
      metadata,
      ...(template.spec ? { spec: template.spec } : {}),
      status: UNSCHEDULABLE,
    };
  }
  return {
    metadata,
    ...(template.spec ? { spec: { ...template.spec, nodeName: 'node-1' } } : {}),
    status: {
      phase: 'Running',
      startTime: at(createdAt + 1),
      conditions: [
        { type: 'PodScheduled', status: 'True' },
        { type: 'Ready', status: 'True' },
      ],
      containerStatuses: [
        {
          name: 'opi',
          ready: true,
          started: true,
          restartCount: 0,
          image: lrp.image,
          imageID: `${lrp.image}@sha256:0123`,
          state: { running: { startedAt: at(createdAt + 2) } },
        },
      ],
    },
  };
}

const nanos = (seconds: number) => `${(T0 / 1000 + seconds).toString()}000000000`;

/** podName → index of the cached instances of an LRP. */
async function cachedIndexes(store: StateStore, processGuid: string): Promise<Record<string, number>> {
  const cached = await store.cachedInstances(processGuid);
  return Object.fromEntries((cached?.instances ?? []).map((i) => [i.podName, i.index]));
}

function waitFor<T>(what: string, probe: () => Promise<T | undefined>, deadlineMs = 20_000): Promise<T> {
  return eventually(probe, what, deadlineMs);
}

/** The fake with a one-shot hook before a call: another actor's move at exactly that point. */
class HookedKube extends FakeKubernetes {
  readonly before: { getDeployment?: () => Promise<void>; listDeployments?: () => Promise<void> } = {};

  private async fire(call: 'getDeployment' | 'listDeployments'): Promise<void> {
    const hook = this.before[call];
    this.before[call] = undefined;
    if (hook) await hook();
  }

  override async getDeployment(namespace: string, name: string) {
    await this.fire('getDeployment');
    return super.getDeployment(namespace, name);
  }

  override async listDeployments<U = Stored<Deployment>>(
    namespace: string | undefined,
    labelSelector?: string,
    pageSize?: number,
    select?: Select<Stored<Deployment>, U>,
  ) {
    await this.fire('listDeployments');
    return super.listDeployments(namespace, labelSelector, pageSize, select);
  }
}

/** The fake with every call delayed by 0–3 microtask turns (seeded), so concurrent runs meet anywhere. */
function jittery(kube: FakeKubernetes, seed: number): KubernetesPort {
  let state = seed;
  const next = (): number => {
    state = (state * 1103515245 + 12345) % 2147483648;
    return state / 2147483648;
  };
  return new Proxy(kube, {
    get(target, prop) {
      const value: unknown = Reflect.get(target, prop, target);
      if (typeof value !== 'function') return value;
      return async (...args: unknown[]): Promise<unknown> => {
        for (let n = Math.floor(next() * 4); n > 0; n--) await Promise.resolve();
        return Reflect.apply(value, target, args) as unknown;
      };
    },
  });
}

/** Every annotation in the fake, on objects and on pod templates, as one text. */
function allAnnotations(kube: FakeKubernetes): string {
  const out: Record<string, string>[] = [];
  for (const r of ['deployments', 'secrets', 'poddisruptionbudgets', 'pods'] as const) {
    for (const o of kube.objects<KubeObject & { spec?: { template?: Pod } }>(r)) {
      out.push(o.metadata.annotations ?? {});
      out.push(o.spec?.template?.metadata.annotations ?? {});
    }
  }
  return JSON.stringify(out);
}

// --- converge ------------------------------------------------------------------------------------------------

describe('converge-lrp: a desired LRP', () => {
  it('creates the Deployment from the translation, stamped with the record generation', async () => {
    const e = newEnv();
    const lrp = newLrp();
    const { generation } = await e.store.desire(lrp);

    await expect(convergeLrp(e.deps, lrp.processGuid)).resolves.toMatch(/^created deployment/);

    const d = await deploymentOf(e, lrp);
    const expected = lrpToDeployment(lrp, { runAsNonRoot: RUN_AS_NON_ROOT });
    expect(d).toBeDefined();
    expect(d!.spec).toEqual(expected.spec);
    expect(d!.metadata.labels).toEqual(expected.metadata.labels);
    expect(d!.metadata.annotations).toEqual({
      ...expected.metadata.annotations,
      [ANNOTATION_GENERATION]: String(generation),
    });
    expect(names(e, 'deployments')).toEqual([workloadName(lrp)]);
  });

  it('makes the registry Secret owned by the Deployment, with the password only in its data', async () => {
    const e = newEnv();
    const lrp = newLrp();
    await desireAndConverge(e, lrp);

    const d = (await deploymentOf(e, lrp))!;
    const secret = await secretOf(e, lrp);
    expect(secret).toBeDefined();
    expect(secret!.type).toBe('kubernetes.io/dockerconfigjson');
    expect(secret!.metadata.ownerReferences).toEqual([
      expect.objectContaining({
        kind: 'Deployment',
        name: d.metadata.name,
        uid: d.metadata.uid,
        controller: true,
      }),
    ]);
    const config = Buffer.from(secret!.data![DOCKER_CONFIG_JSON_KEY]!, 'base64').toString('utf8');
    expect(credentialsFromDockerConfig(config)).toEqual(lrp.registry);
    expect(d.spec!.template.spec!.imagePullSecrets).toEqual([{ name: registrySecretName(lrp) }]);

    // Never in an annotation, nor anywhere on the Deployment.
    expect(allAnnotations(e.kube)).not.toContain(PASSWORD);
    expect(JSON.stringify(d)).not.toContain(PASSWORD);
    expect(JSON.parse(d.metadata.annotations![ANNOTATION_DESIRED_LRP]!)).not.toHaveProperty('registry');
  });

  it('makes a PDB owned by the Deployment when instances > 1, and none for one instance', async () => {
    const e = newEnv();
    const many = newLrp({ instances: 3 });
    const one = newLrp({ instances: 1, appName: 'single' });
    await desireAndConverge(e, many);
    await desireAndConverge(e, one);

    const d = (await deploymentOf(e, many))!;
    const pdb = await pdbOf(e, many);
    expect(pdb?.spec).toEqual({
      minAvailable: '50%',
      selector: {
        matchLabels: { 'cloudfoundry.org/guid': many.guid, 'cloudfoundry.org/version': many.version },
      },
    });
    expect(pdb?.metadata.ownerReferences).toEqual([expect.objectContaining({ uid: d.metadata.uid })]);

    expect(await deploymentOf(e, one)).toBeDefined();
    expect(await pdbOf(e, one)).toBeUndefined();
    expect(names(e, 'poddisruptionbudgets')).toEqual([workloadName(many)]);
  });

  it('makes no Secret and no pull secret reference without credentials', async () => {
    const e = newEnv();
    const { registry: _r, ...rest } = newLrp();
    const lrp: DesiredLrp = rest;
    await desireAndConverge(e, lrp);

    const d = (await deploymentOf(e, lrp))!;
    expect(d.spec!.template.spec!.imagePullSecrets).toBeUndefined();
    expect(names(e, 'secrets')).toEqual([]);
  });

  it('changes nothing when run again', async () => {
    const e = newEnv();
    const lrp = newLrp();
    await desireAndConverge(e, lrp);
    const before = {
      d: (await deploymentOf(e, lrp))!.metadata.resourceVersion,
      s: (await secretOf(e, lrp))!.metadata.resourceVersion,
      p: (await pdbOf(e, lrp))!.metadata.resourceVersion,
    };
    const writes = () => e.kube.calls.filter((c) => c.verb === 'create' || c.verb === 'update').length;
    const writesBefore = writes();

    await expect(convergeLrp(e.deps, lrp.processGuid)).resolves.toMatch(/^unchanged/);
    await expect(convergeLrp(e.deps, lrp.processGuid)).resolves.toMatch(/^unchanged/);

    expect({
      d: (await deploymentOf(e, lrp))!.metadata.resourceVersion,
      s: (await secretOf(e, lrp))!.metadata.resourceVersion,
      p: (await pdbOf(e, lrp))!.metadata.resourceVersion,
    }).toEqual(before);
    expect(writes()).toBe(writesBefore);
  });

  it('replaces the Deployment on an update (replicas, last_updated) without touching the pod template', async () => {
    const e = newEnv();
    const lrp = newLrp({ instances: 3 });
    await desireAndConverge(e, lrp);
    const before = (await deploymentOf(e, lrp))!;
    const secretBefore = (await secretOf(e, lrp))!;

    const updated = await e.store.update(lrp.processGuid, { instances: 5, annotation: '1600000000.5' });
    await expect(convergeLrp(e.deps, lrp.processGuid)).resolves.toMatch(/^updated/);

    const after = (await deploymentOf(e, lrp))!;
    expect(after.metadata.uid).toBe(before.metadata.uid);
    expect(after.spec!.replicas).toBe(5);
    expect(after.metadata.annotations![ANNOTATION_LAST_UPDATED]).toBe('1600000000.5');
    expect(after.metadata.annotations![ANNOTATION_GENERATION]).toBe(String(updated!.generation));
    expect(JSON.parse(after.metadata.annotations![ANNOTATION_DESIRED_LRP]!)).toMatchObject({
      instances: 5,
      annotation: '1600000000.5',
    });
    expect(after.spec!.template).toEqual(before.spec!.template);
    // The companions stay: the Secret unchanged and still owned, the PDB still there.
    expect((await secretOf(e, lrp))!.metadata.resourceVersion).toBe(secretBefore.metadata.resourceVersion);
    expect(await pdbOf(e, lrp)).toBeDefined();

    // An annotation-only update: only the Deployment's annotations move.
    await e.store.update(lrp.processGuid, { instances: 5, annotation: '1600000001.0' });
    await convergeLrp(e.deps, lrp.processGuid);
    const again = (await deploymentOf(e, lrp))!;
    expect(again.spec).toEqual(after.spec);
    expect(again.metadata.annotations![ANNOTATION_LAST_UPDATED]).toBe('1600000001.0');
  });

  it('removes the PDB when scaled to one instance, and makes it again when scaled up', async () => {
    const e = newEnv();
    const lrp = newLrp({ instances: 3 });
    await desireAndConverge(e, lrp);
    expect(await pdbOf(e, lrp)).toBeDefined();

    await e.store.update(lrp.processGuid, { instances: 1, annotation: 'scaled-down' });
    await convergeLrp(e.deps, lrp.processGuid);
    expect((await deploymentOf(e, lrp))!.spec!.replicas).toBe(1);
    expect(await pdbOf(e, lrp)).toBeUndefined();
    expect(await secretOf(e, lrp)).toBeDefined();

    await e.store.update(lrp.processGuid, { instances: 2, annotation: 'scaled-up' });
    await convergeLrp(e.deps, lrp.processGuid);
    expect(await pdbOf(e, lrp)).toBeDefined();
  });

  it('converges to the latest record, whatever generation the job was for', async () => {
    const e = newEnv();
    const lrp = newLrp({ instances: 2 });
    await e.store.desire(lrp);
    const latest = await e.store.update(lrp.processGuid, { instances: 4, annotation: 'newest' });
    // One converge (e.g. the desire's job, run late) applies the update as well.
    await convergeLrp(e.deps, lrp.processGuid);
    const d = (await deploymentOf(e, lrp))!;
    expect(d.spec!.replicas).toBe(4);
    expect(d.metadata.annotations![ANNOTATION_GENERATION]).toBe(String(latest!.generation));
  });

  it('does nothing for a process guid without a record', async () => {
    const e = newEnv();
    await expect(convergeLrp(e.deps, newLrp().processGuid)).resolves.toMatch(/no record/);
    expect(names(e, 'deployments')).toEqual([]);
  });
});

// --- stop --------------------------------------------------------------------------------------------------

describe('converge-lrp: the StatefulSet mode', () => {
  const stsEnv = (): Env => {
    const e = newEnv();
    e.deps = { ...e.deps, workloadKind: 'statefulset', instanceIndexEnv: true };
    return e;
  };
  const statefulSetOf = (e: Env, lrp: DesiredLrp) => e.kube.getStatefulSet(NS, workloadName(lrp));

  it('creates a StatefulSet that tells each instance its index, and owns the Secret and PDB', async () => {
    const e = stsEnv();
    const lrp = newLrp({ instances: 3 });
    const { generation } = await e.store.desire(lrp);
    await expect(convergeLrp(e.deps, lrp.processGuid)).resolves.toMatch(/^created statefulset/);

    const s = (await statefulSetOf(e, lrp))!;
    const expected = lrpToStatefulSet(lrp, { runAsNonRoot: RUN_AS_NON_ROOT, instanceIndexEnv: true });
    expect(s.spec).toEqual(expected.spec);
    expect(s.metadata.annotations?.[ANNOTATION_GENERATION]).toBe(String(generation));
    expect(s.spec?.template.spec?.containers[0]?.env?.map((v) => v.name)).toContain('CF_INSTANCE_INDEX');
    expect(names(e, 'deployments')).toEqual([]);
    for (const owned of [await secretOf(e, lrp), await pdbOf(e, lrp)]) {
      expect(owned?.metadata.ownerReferences).toEqual([
        expect.objectContaining({ kind: 'StatefulSet', uid: s.metadata.uid, controller: true }),
      ]);
    }

    // An update replaces it; nothing else appears.
    await e.store.update(lrp.processGuid, { instances: 1, annotation: '2.0' });
    await expect(convergeLrp(e.deps, lrp.processGuid)).resolves.toMatch(/^updated statefulset/);
    expect((await statefulSetOf(e, lrp))?.spec?.replicas).toBe(1);
    expect(await pdbOf(e, lrp)).toBeUndefined();
    expect(names(e, 'deployments')).toEqual([]);
  });

  it('never converts an LRP that runs as a Deployment: it keeps its kind through updates', async () => {
    const e = newEnv();
    const lrp = newLrp();
    await desireAndConverge(e, lrp);
    const before = (await deploymentOf(e, lrp))!;

    e.deps = { ...e.deps, workloadKind: 'statefulset' };
    await e.store.update(lrp.processGuid, { instances: 2, annotation: '2.0' });
    await expect(convergeLrp(e.deps, lrp.processGuid)).resolves.toMatch(/^updated deployment/);
    expect((await deploymentOf(e, lrp))?.metadata.uid).toBe(before.metadata.uid);
    expect((await deploymentOf(e, lrp))?.spec?.replicas).toBe(2);
    expect(names(e, 'statefulsets')).toEqual([]);

    // A new version is a new LRP: it runs as the configured kind.
    const next = newLrp({ guid: lrp.guid, processGuid: `${lrp.guid}-${randomUUID()}` });
    next.version = next.processGuid.slice(lrp.guid.length + 1);
    await desireAndConverge(e, next);
    expect(names(e, 'statefulsets')).toEqual([workloadName(next)]);
  });

  it("a stop deletes the LRP's workloads of either kind", async () => {
    const e = stsEnv();
    const lrp = newLrp();
    await desireAndConverge(e, lrp);
    // The same LRP also as a Deployment, as a mode switch with a lost record could leave it.
    await e.kube.createDeployment(NS, lrpToDeployment(lrp, { runAsNonRoot: RUN_AS_NON_ROOT }));

    await e.store.stop(lrp.processGuid, lrp.guid, lrp.version);
    await expect(convergeLrp(e.deps, lrp.processGuid)).resolves.toBe(
      'stopped: 1 deployment(s), 1 statefulset(s) deleted',
    );
    expect(names(e, 'statefulsets')).toEqual([]);
    expect(names(e, 'deployments')).toEqual([]);
    expect(await secretOf(e, lrp)).toBeUndefined();
  });
});

describe('converge-lrp: a stopped LRP', () => {
  it('deletes the Deployment, and the cascade takes its Secret, PDB and pods', async () => {
    const e = newEnv();
    const lrp = newLrp({ instances: 3 });
    const bystander = newLrp({ appName: 'bystander' });
    await desireAndConverge(e, lrp);
    await desireAndConverge(e, bystander);
    const d = (await deploymentOf(e, lrp))!;
    // A pod owned by the Deployment (through its ReplicaSet, in a cluster).
    e.kube.put('pods', NS, {
      ...pod(lrp, 'web-0', 0, 'running'),
      metadata: {
        ...pod(lrp, 'web-0', 0, 'running').metadata,
        ownerReferences: [
          { apiVersion: 'apps/v1', kind: 'Deployment', name: d.metadata.name, uid: d.metadata.uid },
        ],
      },
    });

    const { existed } = await e.store.stop(lrp.processGuid, lrp.guid, lrp.version);
    expect(existed).toBe(true);
    await expect(convergeLrp(e.deps, lrp.processGuid)).resolves.toBe('stopped: 1 deployment(s) deleted');

    expect(await deploymentOf(e, lrp)).toBeUndefined();
    expect(await secretOf(e, lrp)).toBeUndefined();
    expect(await pdbOf(e, lrp)).toBeUndefined();
    expect(names(e, 'pods')).toEqual([]);
    // The other LRP is untouched.
    expect(names(e, 'deployments')).toEqual([workloadName(bystander)]);
    expect(names(e, 'secrets')).toEqual([registrySecretName(bystander)]);
    // The tombstone now expires.
    const ttl = await redis.ttl(e.store.keys.lrp(lrp.processGuid));
    expect(ttl).toBeGreaterThan(0);
  });

  it('is fine when run again (nothing left to delete)', async () => {
    const e = newEnv();
    const lrp = newLrp();
    await desireAndConverge(e, lrp);
    await e.store.stop(lrp.processGuid, lrp.guid, lrp.version);
    await convergeLrp(e.deps, lrp.processGuid);

    await expect(convergeLrp(e.deps, lrp.processGuid)).resolves.toBe('stopped: 0 deployment(s) deleted');
    await expect(e.kube.deleteDeployment(NS, workloadName(lrp))).resolves.toBe('absent');
    expect(names(e, 'deployments')).toEqual([]);
  });

  it('deletes the Deployment of an LRP that was never desired here', async () => {
    const e = newEnv();
    const lrp = newLrp();
    const bystander = newLrp({ appName: 'bystander' });
    // Made by an earlier installation, or a record lost: only the cluster knows it.
    e.kube.put('deployments', NS, lrpToDeployment(lrp, { runAsNonRoot: RUN_AS_NON_ROOT }));
    e.kube.put('deployments', NS, lrpToDeployment(bystander, { runAsNonRoot: RUN_AS_NON_ROOT }));

    const { existed } = await e.store.stop(lrp.processGuid, lrp.guid, lrp.version);
    expect(existed).toBe(false);
    await expect(convergeLrp(e.deps, lrp.processGuid)).resolves.toBe('stopped: 1 deployment(s) deleted');

    expect(names(e, 'deployments')).toEqual([workloadName(bystander)]);
  });
});

describe('stop-instance', () => {
  it("deletes one instance's pod, and only a pod of that LRP", async () => {
    const e = newEnv();
    const lrp = newLrp();
    const other = newLrp({ appName: 'other' });
    await desireAndConverge(e, lrp);
    await desireAndConverge(e, other);
    e.kube.put('pods', NS, pod(lrp, 'web-0', 0, 'running'));
    e.kube.put('pods', NS, pod(lrp, 'web-1', 1, 'running'));
    e.kube.put('pods', NS, pod(other, 'other-0', 0, 'running'));

    await expect(stopInstance(e.deps, lrp.processGuid, 'web-1')).resolves.toBe('pod web-1 deleted');
    expect(names(e, 'pods')).toEqual(['other-0', 'web-0']);
    // Again: already gone. Another app's pod: never touched.
    await expect(stopInstance(e.deps, lrp.processGuid, 'web-1')).resolves.toBe('pod web-1 already gone');
    await expect(stopInstance(e.deps, lrp.processGuid, 'other-0')).resolves.toBe('pod other-0 already gone');
    expect(names(e, 'pods')).toEqual(['other-0', 'web-0']);

    await e.store.stop(lrp.processGuid, lrp.guid, lrp.version);
    await expect(stopInstance(e.deps, lrp.processGuid, 'web-0')).resolves.toBe('lrp no longer desired');
    expect(names(e, 'pods')).toEqual(['other-0', 'web-0']);
  });
});

// --- ordering and concurrency -------------------------------------------------------------------------------

describe('converge-lrp: order and concurrency', () => {
  it('desire → converge → stop → desire again → converge ends with the Deployment present', async () => {
    const e = newEnv();
    const lrp = newLrp();
    await desireAndConverge(e, lrp);
    await e.store.stop(lrp.processGuid, lrp.guid, lrp.version);
    const again = await e.store.desire({ ...lrp, annotation: 'desired-again' });
    expect(again.changed).toBe(true);
    await convergeLrp(e.deps, lrp.processGuid);

    const d = await deploymentOf(e, lrp);
    expect(d).toBeDefined();
    expect(d!.metadata.annotations![ANNOTATION_GENERATION]).toBe(String(again.generation));
    expect(d!.metadata.annotations![ANNOTATION_LAST_UPDATED]).toBe('desired-again');
    expect((await secretOf(e, lrp))!.metadata.ownerReferences).toEqual([
      expect.objectContaining({ uid: d!.metadata.uid }),
    ]);
    // The stop's job, late, after the new desire: reads the record, keeps the Deployment.
    await convergeLrp(e.deps, lrp.processGuid);
    expect(await deploymentOf(e, lrp)).toBeDefined();
    expect(await redis.ttl(e.store.keys.lrp(lrp.processGuid))).toBe(-1);
  });

  it('desire → converge → stop → converge → desire again → converge brings it back', async () => {
    const e = newEnv();
    const lrp = newLrp();
    await desireAndConverge(e, lrp);
    await e.store.stop(lrp.processGuid, lrp.guid, lrp.version);
    await convergeLrp(e.deps, lrp.processGuid);
    expect(await deploymentOf(e, lrp)).toBeUndefined();

    await desireAndConverge(e, lrp);
    expect(await deploymentOf(e, lrp)).toBeDefined();
    expect(await pdbOf(e, lrp)).toBeDefined();
    // The new record does not inherit the tombstone's expiry.
    expect(await redis.ttl(e.store.keys.lrp(lrp.processGuid))).toBe(-1);
  });

  it('desire → stop → converge ends with nothing', async () => {
    const e = newEnv();
    const lrp = newLrp();
    await e.store.desire(lrp);
    await e.store.stop(lrp.processGuid, lrp.guid, lrp.version);
    // Both jobs run after the stop: both see the tombstone.
    await convergeLrp(e.deps, lrp.processGuid);
    await convergeLrp(e.deps, lrp.processGuid);
    expect(names(e, 'deployments')).toEqual([]);
    expect(names(e, 'secrets')).toEqual([]);
    expect(names(e, 'poddisruptionbudgets')).toEqual([]);
  });

  it('two converges of one LRP at once make one Deployment, whatever the interleaving', async () => {
    const e = newEnv();
    // The second converge starts a few turns of the event loop after the first, so the two meet at
    // different steps (create, AlreadyExists, Secret ownership, PDB).
    for (let lag = 0; lag < 12; lag++) {
      const lrp = newLrp({ appName: `race-${lag}` });
      await e.store.desire(lrp);
      const late = async (): Promise<string> => {
        for (let i = 0; i < lag; i++) await new Promise<void>((r) => setImmediate(r));
        return convergeLrp(e.deps, lrp.processGuid);
      };
      const results = await Promise.all([convergeLrp(e.deps, lrp.processGuid), late()]);
      expect(results.filter((r) => r.startsWith('created'))).toHaveLength(1);

      const list = await e.kube.listDeployments(NS, `cloudfoundry.org/guid=${lrp.guid}`);
      expect(list.items).toHaveLength(1);
      const d = list.items[0]!;
      expect((await secretOf(e, lrp))!.metadata.ownerReferences).toEqual([
        expect.objectContaining({ uid: d.metadata.uid }),
      ]);
      expect((await pdbOf(e, lrp))!.metadata.ownerReferences).toEqual([
        expect.objectContaining({ uid: d.metadata.uid }),
      ]);
    }
  });
});

describe('converge-lrp: stale views', () => {
  it('two converges of one LRP at once never fail, with calls delayed at random', async () => {
    const e = newEnv();
    const failures: unknown[] = [];
    for (let seed = 1; seed <= 40; seed++) {
      const deps = { ...e.deps, kube: jittery(e.kube, seed) };
      const lrp = newLrp({ appName: `jitter-${seed}` });
      await e.store.desire(lrp);
      const results = await Promise.allSettled([
        convergeLrp(deps, lrp.processGuid),
        convergeLrp(deps, lrp.processGuid),
      ]);
      for (const r of results) if (r.status === 'rejected') failures.push(r.reason);
      const d = (await deploymentOf(e, lrp))!;
      expect((await secretOf(e, lrp))?.metadata.ownerReferences).toEqual([
        expect.objectContaining({ uid: d.metadata.uid }),
      ]);
    }
    expect(failures).toEqual([]);
    expect(e.kube.objects('deployments', NS)).toHaveLength(40);
    expect(e.kube.objects('poddisruptionbudgets', NS)).toHaveLength(40);
  });

  it('a Deployment re-created by a converge that read the record before a stop is deleted after the next sync', async () => {
    const kube = new HookedKube();
    const e = newEnv(kube);
    const lrp = newLrp();
    await e.store.desire(lrp);
    // The converge has read the desired record; the stop and its converge run before it looks at the cluster.
    kube.before.getDeployment = async () => {
      await e.store.stop(lrp.processGuid, lrp.guid, lrp.version);
      await convergeLrp(e.deps, lrp.processGuid);
    };
    await convergeLrp(e.deps, lrp.processGuid);
    expect(await deploymentOf(e, lrp)).toBeDefined();

    await expect(syncWatched(e, SYNC_LOCK_TTL_MS)).resolves.toMatchObject({ converging: 1 });
    expect(await pendingConverges(e.producer)).toEqual([lrp.processGuid]);
    await convergeLrp(e.deps, lrp.processGuid);
    expect(names(e, 'deployments')).toEqual([]);
    expect(names(e, 'secrets')).toEqual([]);
    expect(names(e, 'poddisruptionbudgets')).toEqual([]);
  });

  it('a Deployment put back to an older record by a late converge is brought forward after the next sync', async () => {
    const kube = new HookedKube();
    const e = newEnv(kube);
    const lrp = newLrp({ instances: 2 });
    await desireAndConverge(e, lrp);
    await e.store.update(lrp.processGuid, { instances: 3, annotation: 'first update' });
    let latest = 0;
    // This converge read 'first update'; a second update and its converge finish before it writes.
    kube.before.getDeployment = async () => {
      latest = (await e.store.update(lrp.processGuid, { instances: 4, annotation: 'second update' }))!
        .generation;
      await convergeLrp(e.deps, lrp.processGuid);
    };
    await convergeLrp(e.deps, lrp.processGuid);

    await syncWatched(e, SYNC_LOCK_TTL_MS);
    for (const pg of await pendingConverges(e.producer)) await convergeLrp(e.deps, pg);
    const d = (await deploymentOf(e, lrp))!;
    expect(d.spec!.replicas).toBe(4);
    expect(d.metadata.annotations![ANNOTATION_LAST_UPDATED]).toBe('second update');
    expect(d.metadata.annotations![ANNOTATION_GENERATION]).toBe(String(latest));
  });
});

// --- errors --------------------------------------------------------------------------------------------------

describe('converge-lrp: Kubernetes errors', () => {
  it('throws a transient KubeApiError when the create is unavailable; a retry then converges', async () => {
    const e = newEnv();
    const lrp = newLrp();
    await e.store.desire(lrp);
    e.kube.inject({ verb: 'create', resource: 'deployments', failure: 'unavailable' });

    const err: unknown = await convergeLrp(e.deps, lrp.processGuid).catch((x: unknown) => x);
    expect(err).toBeInstanceOf(KubeApiError);
    expect(err).toMatchObject({ transient: true, status: 503 });
    expect(await deploymentOf(e, lrp)).toBeUndefined();

    await expect(convergeLrp(e.deps, lrp.processGuid)).resolves.toMatch(/^created/);
    const d = (await deploymentOf(e, lrp))!;
    expect((await secretOf(e, lrp))!.metadata.ownerReferences).toEqual([
      expect.objectContaining({ uid: d.metadata.uid }),
    ]);
    expect(await pdbOf(e, lrp)).toBeDefined();
  });

  it('throws a permanent KubeApiError when the create is invalid', async () => {
    const e = newEnv();
    const lrp = newLrp();
    await e.store.desire(lrp);
    e.kube.inject({ verb: 'create', resource: 'deployments', failure: 'invalid' });

    const err: unknown = await convergeLrp(e.deps, lrp.processGuid).catch((x: unknown) => x);
    expect(err).toBeInstanceOf(KubeApiError);
    expect(err).toMatchObject({ transient: false, status: 422 });
  });

  it('deletes the pull Secret on stop when the Deployment was never created', async () => {
    const e = newEnv();
    const lrp = newLrp(); // the sample carries registry credentials
    await e.store.desire(lrp);
    e.kube.inject({ verb: 'create', resource: 'deployments', failure: 'invalid' });
    await convergeLrp(e.deps, lrp.processGuid).catch(() => undefined);
    expect(await secretOf(e, lrp)).toBeDefined();
    expect(await deploymentOf(e, lrp)).toBeUndefined();
    await e.store.stop(lrp.processGuid, lrp.guid, lrp.version);
    await convergeLrp(e.deps, lrp.processGuid);
    expect(await secretOf(e, lrp)).toBeUndefined();
  });

  it('recovers when the answer to the create was lost (the Deployment exists)', async () => {
    const e = newEnv();
    const lrp = newLrp();
    await e.store.desire(lrp);
    e.kube.inject({ verb: 'create', resource: 'deployments', failure: 'timeout', afterEffect: true });

    await expect(convergeLrp(e.deps, lrp.processGuid)).rejects.toMatchObject({ transient: true });
    await convergeLrp(e.deps, lrp.processGuid);

    const d = (await deploymentOf(e, lrp))!;
    expect(names(e, 'deployments')).toEqual([workloadName(lrp)]);
    expect((await secretOf(e, lrp))!.metadata.ownerReferences).toEqual([
      expect.objectContaining({ uid: d.metadata.uid }),
    ]);
    expect((await pdbOf(e, lrp))!.metadata.ownerReferences).toEqual([
      expect.objectContaining({ uid: d.metadata.uid }),
    ]);
  });

  it('removes the PDB on the retry when its delete failed after the scale-down', async () => {
    const e = newEnv();
    const lrp = newLrp({ instances: 3 });
    await desireAndConverge(e, lrp);
    await e.store.update(lrp.processGuid, { instances: 1, annotation: 'scaled-down' });
    e.kube.inject({ verb: 'delete', resource: 'poddisruptionbudgets', failure: 'unavailable' });

    await expect(convergeLrp(e.deps, lrp.processGuid)).rejects.toMatchObject({ transient: true });
    expect((await deploymentOf(e, lrp))!.spec!.replicas).toBe(1);

    await convergeLrp(e.deps, lrp.processGuid);
    expect(await pdbOf(e, lrp)).toBeUndefined();
  });

  it('creates a fresh desire with a single call, reading nothing first', async () => {
    const e = newEnv();
    const { registry: _r, ...lrp } = newLrp();
    await e.store.desire({ ...lrp, instances: 1 });
    const before = e.kube.calls.length;

    await expect(convergeLrp(e.deps, lrp.processGuid, { fresh: true })).resolves.toMatch(/^created/);

    expect(e.kube.calls.slice(before).map((c) => `${c.verb} ${c.resource}`)).toEqual(['create deployments']);
  });

  it('converges as without the hint when "fresh" is wrong (the Deployment exists, older)', async () => {
    const e = newEnv();
    const lrp = newLrp();
    await desireAndConverge(e, lrp);
    const updated = await e.store.update(lrp.processGuid, { instances: 1, annotation: 'scaled down' });

    await expect(convergeLrp(e.deps, lrp.processGuid, { fresh: true })).resolves.toMatch(/^updated/);

    const d = (await deploymentOf(e, lrp))!;
    expect(d.spec!.replicas).toBe(1);
    expect(d.metadata.annotations![ANNOTATION_GENERATION]).toBe(String(updated!.generation));
    expect(await pdbOf(e, lrp)).toBeUndefined();
  });

  it('removes the Secret on the retry when its delete failed after a desire without credentials', async () => {
    const e = newEnv();
    const lrp = newLrp();
    await desireAndConverge(e, lrp);
    await e.store.stop(lrp.processGuid, lrp.guid, lrp.version);
    const { registry: _r, ...rest } = lrp;
    await e.store.desire({ ...rest, annotation: 'public image now' });
    e.kube.inject({ verb: 'delete', resource: 'secrets', failure: 'unavailable' });

    await expect(convergeLrp(e.deps, lrp.processGuid)).rejects.toMatchObject({ transient: true });
    await convergeLrp(e.deps, lrp.processGuid);

    expect((await deploymentOf(e, lrp))!.spec!.template.spec!.imagePullSecrets).toBeUndefined();
    expect(await secretOf(e, lrp)).toBeUndefined();
  });
});

describe('workers: dispatch through BullMQ', () => {
  let e: Env;
  let running: RunningWorkers;

  beforeEach(() => {
    e = newEnv();
    running = startWorkers(e.deps, {
      connection: redis,
      prefix: e.prefix,
      concurrency: 2,
      lockMs: 30_000,
    });
  });

  afterEach(async () => {
    await running.close(5000);
  });

  /** Waits until the job reaches one of the final states, and returns it (read after) with that state. */
  async function finished(id: string): Promise<{ job: Job; state: string }> {
    const queue = e.producer.queues[QUEUE_NAMES.lrp];
    return waitFor(`job ${id} to finish`, async () => {
      const state = await queue.getJobState(id);
      if (state !== 'completed' && state !== 'failed') return undefined;
      const job = await queue.getJob(id);
      return job ? { job, state } : undefined;
    });
  }

  async function convergeJob(lrp: DesiredLrp, failure?: FakeFailure, times = 1): Promise<string> {
    const { generation } = await e.store.desire(lrp);
    if (failure) e.kube.inject({ verb: 'create', resource: 'deployments', failure, times });
    const cause = `gen${generation}`;
    await e.producer.convergeLrp({ processGuid: lrp.processGuid }, cause);
    return `converge-${lrp.processGuid}-${cause}`;
  }

  it('completes a converge job', async () => {
    const lrp = newLrp();
    const { job, state } = await finished(await convergeJob(lrp));
    expect(state).toBe('completed');
    expect(job.returnvalue).toMatch(/^created deployment/);
    expect(await deploymentOf(e, lrp)).toBeDefined();
  });

  it('fails a job at once on a permanent error, keeping the reason', async () => {
    const lrp = newLrp();
    const { job, state } = await finished(await convergeJob(lrp, 'invalid'));
    expect(state).toBe('failed');
    expect(job.attemptsMade).toBe(1);
    expect(job.failedReason).toMatch(/^kubernetes refused: 422 Invalid: .*injected fault/);
    expect(await deploymentOf(e, lrp)).toBeUndefined();
  });

  it('retries a job after a transient error, which then converges', async () => {
    const lrp = newLrp();
    const { job, state } = await finished(await convergeJob(lrp, 'unavailable'));
    expect(state).toBe('completed');
    expect(job.attemptsMade).toBe(2);
    expect(await deploymentOf(e, lrp)).toBeDefined();
  });

  it('fails a job whose transient error outlasts its attempts, keeping the reason', async () => {
    const lrp = newLrp();
    const { job, state } = await finished(await convergeJob(lrp, 'unavailable', Infinity));
    expect(state).toBe('failed');
    expect(job.attemptsMade).toBe(2);
    expect(job.failedReason).toContain('the server is currently unable to handle the request');
    e.kube.clearFailures();
  });

  it('fails an invalid payload or an unknown job name at once', async () => {
    const q = e.producer.queues[QUEUE_NAMES.lrp];
    await q.add('converge-lrp', { processGuid: 'x' }, { jobId: 'bad-payload' });
    await q.add('no-such-job', {}, { jobId: 'bad-name' });
    const bad = await finished('bad-payload');
    expect(bad.state).toBe('failed');
    expect(bad.job.attemptsMade).toBe(1);
    expect(bad.job.failedReason).toMatch(/^invalid payload/);
    const unknown = await finished('bad-name');
    expect(unknown.state).toBe('failed');
    expect(unknown.job.failedReason).toBe('unknown job name no-such-job');
  });

  it('runs stop-instance and sync jobs', async () => {
    const lrp = newLrp();
    await desireAndConverge(e, lrp);
    e.kube.put('pods', NS, pod(lrp, 'web-0', 0, 'running'));
    await e.producer.stopInstance({ processGuid: lrp.processGuid, index: 0, podName: 'web-0' });
    const stopped = await finished(`stop-${lrp.processGuid}-0-web-0`);
    expect(stopped.state).toBe('completed');
    expect(stopped.job.returnvalue).toBe('pod web-0 deleted');
    expect(names(e, 'pods')).toEqual([]);

    // The sync queue is served only by the process that watches the cluster (startSyncWorker).
    await e.producer.syncNow();
    await new Promise((r) => setTimeout(r, 300));
    const [sync] = await e.producer.queues[QUEUE_NAMES.sync].getJobs(['waiting', 'active', 'completed']);
    expect(await sync?.getState()).toBe('waiting');
  });
});

// --- sync -------------------------------------------------------------------------------------------------

describe('sync-cluster', () => {
  it('caches instances with indexes 0..n-1 and their states, and keeps the indexes', async () => {
    const e = newEnv();
    const lrp = newLrp({ instances: 3 });
    const other = newLrp({ instances: 1, appName: 'other' });
    await desireAndConverge(e, lrp);
    await desireAndConverge(e, other);
    e.kube.put('pods', NS, pod(lrp, 'web-c', 0, 'running'));
    e.kube.put('pods', NS, pod(lrp, 'web-a', 1, 'running'));
    e.kube.put('pods', NS, pod(lrp, 'web-b', 2, 'unschedulable'));
    e.kube.put('pods', NS, pod(other, 'other-a', 0, 'running'));
    // Not an LRP pod: ignored.
    e.kube.put('pods', NS, { metadata: { name: 'stranger', labels: { app: 'stranger' } } });

    const report = await syncWatched(e, SYNC_LOCK_TTL_MS);
    expect(report).toMatchObject({ workloads: 2, pods: 4, converging: 0, adopted: 0 });

    const cached = await e.store.cachedInstances(lrp.processGuid);
    expect(cached?.instances.sort((a, b) => a.index - b.index)).toEqual([
      { index: 0, podName: 'web-c', sinceNs: nanos(2), state: 'RUNNING' },
      { index: 1, podName: 'web-a', sinceNs: nanos(3), state: 'RUNNING' },
      {
        index: 2,
        podName: 'web-b',
        sinceNs: '0',
        state: 'UNCLAIMED',
        placementError: 'Insufficient resources: memory',
      },
    ]);
    expect(await cachedIndexes(e.store, lrp.processGuid)).toEqual({ 'web-c': 0, 'web-a': 1, 'web-b': 2 });
    expect(await cachedIndexes(e.store, other.processGuid)).toEqual({ 'other-a': 0 });
    expect(await e.store.syncMeta()).toMatchObject({ deployments: 2, pods: 4 });

    // Again: every pod keeps its index.
    await syncWatched(e, SYNC_LOCK_TTL_MS);
    expect(await cachedIndexes(e.store, lrp.processGuid)).toEqual({ 'web-c': 0, 'web-a': 1, 'web-b': 2 });

    // web-a goes and an older-looking pod comes: the new pod takes the freed index, the others keep theirs.
    await e.kube.deletePod(NS, 'web-a');
    e.kube.put('pods', NS, pod(lrp, 'web-0-new', -5, 'running'));
    await syncWatched(e, SYNC_LOCK_TTL_MS);
    expect(await cachedIndexes(e.store, lrp.processGuid)).toEqual({ 'web-c': 0, 'web-0-new': 1, 'web-b': 2 });

    // A terminating pod is no longer an instance.
    e.kube.put('pods', NS, {
      ...pod(lrp, 'web-c', 0, 'running'),
      metadata: { ...pod(lrp, 'web-c', 0, 'running').metadata, deletionTimestamp: at(60) },
    });
    await syncWatched(e, SYNC_LOCK_TTL_MS);
    expect(await cachedIndexes(e.store, lrp.processGuid)).toEqual({ 'web-0-new': 1, 'web-b': 2 });
  });

  it('runs one sync at a time', async () => {
    const e = newEnv();
    await desireAndConverge(e, newLrp());
    const results = await Promise.all([syncWatched(e, SYNC_LOCK_TTL_MS), syncWatched(e, SYNC_LOCK_TTL_MS)]);
    expect(results.filter((r) => r === undefined)).toHaveLength(1);
    expect(results.filter((r) => r !== undefined)).toHaveLength(1);

    // Held elsewhere: skipped; released: runs.
    const release = await e.store.tryLockSync('another-worker', SYNC_LOCK_TTL_MS);
    expect(release).toBeDefined();
    await expect(syncWatched(e, SYNC_LOCK_TTL_MS)).resolves.toBeUndefined();
    await release!();
    await expect(syncWatched(e, SYNC_LOCK_TTL_MS)).resolves.toBeDefined();
  });

  it('holds the sync lock for as long as its sync runs, and frees a dead holder’s soon', async () => {
    const ttlMs = 300;
    const kube = new HookedKube();
    const e = newEnv(kube);
    await desireAndConverge(e, newLrp());
    // A sync three lock lifetimes long: the lock is extended while it runs.
    const slow = syncWatched(e, ttlMs, 3 * ttlMs);
    await new Promise((r) => setTimeout(r, 2 * ttlMs));
    await expect(syncWatched(e, ttlMs)).resolves.toBeUndefined();
    await expect(slow).resolves.toBeDefined();
    expect(await redis.exists(e.store.keys.syncLock)).toBe(0);

    // A worker killed mid-sync leaves its lock behind, never extended: the sync runs once it lapses.
    await redis.set(e.store.keys.syncLock, 'killed-worker', 'PX', ttlMs);
    await expect(syncWatched(e, ttlMs)).resolves.toBeUndefined();
    await new Promise((r) => setTimeout(r, ttlMs + 100));
    await expect(syncWatched(e, ttlMs)).resolves.toBeDefined();
  });

  it('does not hide an LRP desired again while the sync runs', async () => {
    const kube = new HookedKube();
    const e = newEnv(kube);
    const lrp = newLrp();
    await desireAndConverge(e, lrp);
    await e.store.stop(lrp.processGuid, lrp.guid, lrp.version);
    await convergeLrp(e.deps, lrp.processGuid);

    // The sync has read the records (a tombstone); CC desires the LRP again before it lists the cluster.
    kube.before.listDeployments = async () => {
      await e.store.desire({ ...lrp, annotation: 'restarted' });
    };
    await syncWatched(e, SYNC_LOCK_TTL_MS);
    expect((await schedulingInfos(e.store)).get(lrp.processGuid)).toBe('restarted');
    await syncWatched(e, SYNC_LOCK_TTL_MS);
    expect((await schedulingInfos(e.store)).get(lrp.processGuid)).toBe('restarted');

    // Likewise while the old Deployment is still there: the new desire's entry is not overwritten.
    const second = newLrp({ appName: 'second' });
    await desireAndConverge(e, second);
    await e.store.stop(second.processGuid, second.guid, second.version);
    kube.before.listDeployments = async () => {
      await e.store.desire({ ...second, annotation: 'second restarted' });
    };
    await syncWatched(e, SYNC_LOCK_TTL_MS);
    expect((await schedulingInfos(e.store)).get(second.processGuid)).toBe('second restarted');
  });
});

describe.each(WORKLOAD_KINDS)('sync-cluster over %ss', (kind) => {
  it('enqueues a converge for a desired LRP whose workload is missing or behind', async () => {
    const e = modeEnv(kind);
    const gone = newLrp({ appName: 'gone' });
    const behind = newLrp({ appName: 'behind' });
    const fine = newLrp({ appName: 'fine' });
    for (const l of [gone, behind, fine]) await desireAndConverge(e, l);

    await expect(syncWatched(e, SYNC_LOCK_TTL_MS)).resolves.toMatchObject({ converging: 0 });
    expect(await pendingConverges(e.producer)).toEqual([]);

    await workloadVerbs(e.kube, kind).remove(NS, workloadName(gone));
    await e.store.update(behind.processGuid, { instances: 7, annotation: 'not yet converged' });
    await expect(syncWatched(e, SYNC_LOCK_TTL_MS)).resolves.toMatchObject({ converging: 2 });
    expect(await pendingConverges(e.producer)).toEqual([gone.processGuid, behind.processGuid].sort());

    // Once converged, the next sync finds nothing to do.
    await convergeLrp(e.deps, gone.processGuid);
    await convergeLrp(e.deps, behind.processGuid);
    await expect(syncWatched(e, SYNC_LOCK_TTL_MS)).resolves.toMatchObject({ converging: 0 });
    expect(await workloadOf(e, gone)).toBeDefined();
    expect((await workloadOf(e, behind))!.spec!.replicas).toBe(7);
  });

  it('rebuilds a record Redis lost from the workload, and lists it in GET /apps again', async () => {
    const e = modeEnv(kind);
    const original = newLrp({ instances: 3 });
    await desireAndConverge(e, original);
    const updated = (await e.store.update(original.processGuid, {
      instances: 4,
      annotation: '1700000000.0',
    }))!;
    await convergeLrp(e.deps, original.processGuid);
    const template = (await workloadOf(e, original))!.spec!.template;

    // As a flush would: the record and its scheduling info are gone.
    await redis.del(e.store.keys.lrp(original.processGuid));
    await redis.hdel(e.store.keys.sched, original.processGuid);
    expect((await schedulingInfos(e.store)).has(original.processGuid)).toBe(false);

    await expect(syncWatched(e, SYNC_LOCK_TTL_MS)).resolves.toMatchObject({ adopted: 1 });

    const record = await e.store.get(original.processGuid);
    expect(record?.state).toBe('desired');
    // Everything, the registry credentials included (from the Secret).
    expect(record?.state === 'desired' ? record.lrp : undefined).toEqual(updated.lrp);
    expect((await schedulingInfos(e.store)).get(original.processGuid)).toBe('1700000000.0');
    expect(await pendingConverges(e.producer)).toEqual([original.processGuid]);

    // The converge the sync asked for re-stamps the workload without rolling its pods.
    await expect(convergeLrp(e.deps, original.processGuid)).resolves.toMatch(/^updated/);
    const d = (await workloadOf(e, original))!;
    expect(d.spec!.template).toEqual(template);
    expect(d.metadata.annotations![ANNOTATION_GENERATION]).toBe(String(record!.generation));
  });

  it('rebuilds a lost record without credentials when the Secret is lost as well', async () => {
    const e = modeEnv(kind);
    const original = newLrp();
    await desireAndConverge(e, original);
    await redis.del(e.store.keys.lrp(original.processGuid));
    await redis.hdel(e.store.keys.sched, original.processGuid);
    await e.kube.deleteSecret(NS, registrySecretName(original));

    await syncWatched(e, SYNC_LOCK_TTL_MS);
    const { registry: _r, ...withoutRegistry } = original;
    const record = await e.store.get(original.processGuid);
    expect(record?.state === 'desired' ? record.lrp : undefined).toEqual(withoutRegistry);
  });

  it('keeps a stopped LRP in GET /apps while its workload exists, and drops it once gone', async () => {
    const e = modeEnv(kind);
    const lrp = newLrp();
    const other = newLrp({ appName: 'other' });
    await desireAndConverge(e, lrp);
    await desireAndConverge(e, other);
    await e.store.stop(lrp.processGuid, lrp.guid, lrp.version);

    await expect(syncWatched(e, SYNC_LOCK_TTL_MS)).resolves.toMatchObject({ converging: 1, adopted: 0 });
    let infos = await schedulingInfos(e.store);
    expect(infos.get(lrp.processGuid)).toBe(lrp.annotation);
    expect(infos.get(other.processGuid)).toBe(other.annotation);
    expect(await pendingConverges(e.producer)).toEqual([lrp.processGuid]);
    // The tombstone stays a tombstone: the sync does not adopt what was stopped.
    expect((await e.store.get(lrp.processGuid))?.state).toBe('stopped');

    await convergeLrp(e.deps, lrp.processGuid);
    await syncWatched(e, SYNC_LOCK_TTL_MS);
    infos = await schedulingInfos(e.store);
    expect(infos.has(lrp.processGuid)).toBe(false);
    expect(infos.get(other.processGuid)).toBe(other.annotation);
  });

  it('keeps the older of two workloads of one LRP (one of each kind) and converges it', async () => {
    const e = modeEnv(kind);
    const lrp = newLrp({ instances: 2 });
    await desireAndConverge(e, lrp);
    const older = (await workloadOf(e, lrp))!;
    // After the mode changed and Redis lost the record, a fresh desire made the other kind too.
    const other = workloadVerbs(e.kube, OTHER_KIND[kind]);
    await new Promise((r) => setTimeout(r, 1100)); // a later creationTimestamp (whole seconds)
    await other.create(NS, other.build(lrp, e.deps));

    await expect(syncWatched(e, SYNC_LOCK_TTL_MS)).resolves.toMatchObject({ workloads: 2, twinsDeleted: 1 });
    expect(await other.get(NS, workloadName(lrp))).toBeUndefined();
    expect((await workloadOf(e, lrp))?.metadata.uid).toBe(older.metadata.uid);
    expect(await pendingConverges(e.producer)).toEqual([lrp.processGuid]);
    await expect(syncWatched(e, SYNC_LOCK_TTL_MS)).resolves.toMatchObject({ workloads: 1, twinsDeleted: 0 });
  });
});
