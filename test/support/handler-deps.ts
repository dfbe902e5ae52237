/**
 * The worker handlers' dependencies for integration tests: real Redis (a key prefix per env), BullMQ, and
 * a simulated cluster of its own per env (API server, store and garbage collector; no controllers, so the
 * tests seed pods themselves) reached through the client-node adapter, wrapped with `withFaults` and
 * one-shot hooks. `handlerSuite` registers the jest hooks that connect and clean up.
 */
import { randomUUID } from 'node:crypto';
import type { Redis } from 'ioredis';
import { CallbackClient } from '@opi/callbacks';
import type { DesiredLrp, WorkloadKind } from '@opi/domain';
import { ClientNodeKubernetes, KubeApiError, type KubeCallReport, loadKubeConfig } from '@opi/kube';
import type { Pod } from '@opi/kube-objects';
import { type FaultyKubernetes, withFaults } from '@opi/kube/testing';
import { type KubeObject, type Simulator, startSimulator } from '@opi/kube-sim';
import { createLogger } from '@opi/logging';
import { JobProducer, workerConnection } from '@opi/queue';
import { StateStore, TaskStore } from '@opi/state';
import { registrySecretName, workloadName } from '@opi/translation';
import { type HandlerDeps, convergeLrp } from '../../apps/worker/src/index.js';
import { workloadVerbs } from '../../apps/worker/src/handlers/workload-verbs.js';
import { sampleLrp } from '../../libs/translation/src/lrp.fixture.js';
import { type HookedKubernetes, withHooks } from './kube-wrappers.js';
import { deletePrefix } from './redis-keys.js';

export const NS = 'cf-workloads';
export const RUN_AS_NON_ROOT = true;
export const SYNC_LOCK_TTL_MS = 60_000;
export const REDIS_URL = process.env['REDIS_URL'] ?? 'redis://127.0.0.1:6379';
export const logger = createLogger({ level: 'silent', pretty: false });

/** The adapter over an env's simulated cluster, with fault rules and one-shot hooks. */
export type TestKube = HookedKubernetes<FaultyKubernetes>;

export interface SimCluster {
  sim: Simulator;
  kube: TestKube;
  /** Every HTTP call the adapter made, in order (one per page of a list). */
  calls: KubeCallReport[];
  close(): Promise<void>;
}

/** A simulated cluster without controllers, holding `namespaces`, and the adapter over it. */
export async function startSimCluster(namespaces: string[] = [NS]): Promise<SimCluster> {
  const sim = await startSimulator({ seed: 7, controllers: false, namespaces });
  const calls: KubeCallReport[] = [];
  const adapter = new ClientNodeKubernetes(loadKubeConfig({ kubeconfigYaml: sim.kubeconfig() }), {
    requestTimeoutMs: 10_000,
    onCall: (c) => calls.push(c),
  });
  return {
    sim,
    kube: withHooks(withFaults(adapter)),
    calls,
    close: async () => {
      adapter.close();
      await sim.close();
    },
  };
}

/** A 422 as the API server answers a write it refuses: permanent. */
export function invalidError(): KubeApiError {
  return new KubeApiError({
    status: 422,
    reason: 'Invalid',
    message: 'the object is invalid: injected fault',
    transient: false,
  });
}

/** What the adapter throws when no answer came in time: transient (the call may have taken effect). */
export function timeoutError(): KubeApiError {
  return new KubeApiError({
    status: undefined,
    reason: 'Timeout',
    message: 'no answer in time',
    transient: true,
  });
}

/** What every handler needs, over the given Redis prefix and port. */
export function handlerDeps(
  redis: Redis,
  prefix: string,
  kube: HandlerDeps['kube'],
  producer: JobProducer,
): HandlerDeps {
  return {
    store: new StateStore(redis, prefix),
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
}

export interface Env extends SimCluster {
  redis: Redis;
  prefix: string;
  store: StateStore;
  producer: JobProducer;
  deps: HandlerDeps;
}

export interface HandlerSuite {
  /** A fresh cluster and Redis prefix; `kind`: what new LRPs run as (with the instance index env). */
  newEnv(kind?: WorkloadKind): Promise<Env>;
  readonly redis: Redis;
}

/** Registers beforeAll/afterAll: one Redis connection, and every env's cluster, queues and keys removed. */
export function handlerSuite(name: string): HandlerSuite {
  const base = `test-${name}-${randomUUID().slice(0, 8)}`;
  let redis: Redis | undefined;
  let seq = 0;
  const envs: Env[] = [];
  beforeAll(() => {
    redis = workerConnection(REDIS_URL);
  });
  afterAll(async () => {
    for (const e of envs) {
      for (const q of Object.values(e.producer.queues)) await q.obliterate({ force: true });
      await e.producer.close();
      await e.close();
      await deletePrefix(e.redis, e.prefix);
    }
    await redis?.quit();
  });
  const suite: HandlerSuite = {
    get redis(): Redis {
      if (!redis) throw new Error('handlerSuite: Redis is connected in beforeAll');
      return redis;
    },
    async newEnv(kind) {
      seq += 1;
      const prefix = `${base}-${seq}`;
      const cluster = await startSimCluster();
      const producer = new JobProducer({ connection: suite.redis, prefix, attempts: 2 });
      const deps = handlerDeps(suite.redis, prefix, cluster.kube, producer);
      if (kind) Object.assign(deps, { workloadKind: kind, instanceIndexEnv: true });
      const e: Env = { ...cluster, redis: suite.redis, prefix, store: deps.store, producer, deps };
      envs.push(e);
      return e;
    },
  };
  return suite;
}

// --- LRPs and what the cluster holds of them ----------------------------------------------------------

/** A complete LRP of its own (fresh guid and version), in NS. */
export function newLrp(overrides: Partial<DesiredLrp> = {}): DesiredLrp {
  const guid = randomUUID();
  const version = randomUUID();
  return sampleLrp({ processGuid: `${guid}-${version}`, guid, version, ...overrides });
}

export async function desireAndConverge(e: Env, lrp: DesiredLrp): Promise<number> {
  const { generation } = await e.store.desire(lrp);
  await convergeLrp(e.deps, lrp.processGuid);
  return generation;
}

export const deploymentOf = (e: Env, lrp: DesiredLrp) => e.kube.deployments.get(NS, workloadName(lrp));
export const statefulSetOf = (e: Env, lrp: DesiredLrp) => e.kube.statefulsets.get(NS, workloadName(lrp));
export const secretOf = (e: Env, lrp: DesiredLrp) => e.kube.secrets.get(NS, registrySecretName(lrp));
export const pdbOf = (e: Env, lrp: DesiredLrp) => e.kube.poddisruptionbudgets.get(NS, workloadName(lrp));
/** The LRP's workload of the kind its env's mode makes. */
export const workloadOf = (e: Env, lrp: DesiredLrp) =>
  workloadVerbs(e.kube, e.deps.workloadKind ?? 'deployment').get(NS, workloadName(lrp));

type Held = 'deployments' | 'statefulsets' | 'secrets' | 'poddisruptionbudgets' | 'pods';
const GROUPS: Record<Held, string> = {
  deployments: 'apps',
  statefulsets: 'apps',
  secrets: '',
  poddisruptionbudgets: 'policy',
  pods: '',
};

/** The objects of a kind the simulated cluster holds in NS, straight from its store. */
export function objects(e: SimCluster, resource: Held): KubeObject[] {
  return e.sim.store.all(e.sim.store.registry.get(GROUPS[resource], resource), NS);
}

/**
 * Sorted names of what the cluster holds in NS. A deleted pod on a node stays Terminating until its
 * kubelet (absent here) removes it, so pods marked for deletion count as gone.
 */
export function names(e: SimCluster, resource: Held): string[] {
  return objects(e, resource)
    .filter((o) => resource !== 'pods' || !o.metadata.deletionTimestamp)
    .map((o) => o.metadata.name)
    .sort();
}

/** Every annotation in the cluster, on objects and on pod templates, as one text. */
export function allAnnotations(e: SimCluster): string {
  const out: Record<string, string>[] = [];
  for (const r of ['deployments', 'statefulsets', 'secrets', 'poddisruptionbudgets', 'pods'] as const) {
    for (const o of objects(e, r) as (KubeObject & { spec?: { template?: Pod } })[]) {
      out.push(o.metadata.annotations ?? {});
      out.push(o.spec?.template?.metadata.annotations ?? {});
    }
  }
  return JSON.stringify(out);
}

/** Removes the pods marked for deletion, as their kubelet (absent here) would once their containers stopped. */
export function removeTerminatedPods(e: SimCluster): void {
  const type = e.sim.store.registry.get('', 'pods');
  for (const p of objects(e, 'pods')) {
    if (p.metadata.deletionTimestamp)
      e.sim.store.delete(type, NS, p.metadata.name, { gracePeriodSeconds: 0 });
  }
}

/**
 * `object` as the API server would store it in NS (its defaults applied), by a dry-run create under
 * another name: what a workload written from the translation compares equal to.
 */
export function defaulted<T extends { metadata: { name: string } }>(
  e: SimCluster,
  resource: 'deployments' | 'statefulsets',
  object: T,
): T {
  const type = e.sim.store.registry.get('apps', resource);
  const body = { ...object, metadata: { ...object.metadata, name: 'defaulted-dry-run', namespace: NS } };
  const out = e.sim.store.create(type, body as unknown as KubeObject, { dryRun: true });
  return { ...out, metadata: { ...out.metadata, name: object.metadata.name } } as unknown as T;
}

/**
 * Stores a pod as a ReplicaSet and the kubelet would have left it: created at its
 * `metadata.creationTimestamp` (the store's clock is set to it for the create), then its status written.
 */
export function seedPod(e: SimCluster, pod: Pod): void {
  const store = e.sim.store;
  const type = store.registry.get('', 'pods');
  const { status, ...body } = pod;
  const created = pod.metadata.creationTimestamp ? Date.parse(pod.metadata.creationTimestamp) : undefined;
  const clock = store as { now: () => number };
  const now = clock.now;
  if (created !== undefined) clock.now = () => created;
  let stored: KubeObject;
  try {
    stored = store.create(type, {
      apiVersion: 'v1',
      kind: 'Pod',
      ...body,
      metadata: { ...body.metadata, namespace: NS },
    } as unknown as KubeObject);
  } finally {
    clock.now = now;
  }
  if (status) store.replace(type, { ...stored, status }, { subresource: 'status' });
}
