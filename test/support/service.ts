/**
 * The whole service in-process for end-to-end tests: the simulated cluster, real Redis (own prefix or
 * database), the API on a free port and any number of worker sets, each with its own connections, as
 * separate processes would have.
 */
import { deletePrefix } from './redis-keys.js';
import { type ChildProcess, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Queue } from 'bullmq';
import { Redis } from 'ioredis';
import {
  AppsV1Api,
  CoreV1Api,
  KubeConfig,
  type V1Deployment,
  type V1StatefulSet,
} from '@kubernetes/client-node';
import { type Settings, parseSettings } from '@opi/config';
import { loadKubeConfig } from '@opi/kube';
import { QUEUE_NAMES } from '@opi/queue';
import { type BehaviourConfig, FAST_BEHAVIOUR, type Simulator, startSimulator } from '@opi/kube-sim';
import { createLogger } from '@opi/logging';
import { type RunningApi, startApi } from '../../apps/api/src/index.js';
import { type RunningWorker, startWorker } from '../../apps/worker/src/index.js';
import { eventually as poll } from './eventually.js';

export const NAMESPACE = 'cf-workloads';
/**
 * What new LRPs run as in this run: the app suites run once per kind (the `integration-statefulset`
 * jest project sets OPI_TEST_WORKLOAD_KIND; see jest.config.mjs).
 */
export const WORKLOAD_KIND: 'deployment' | 'statefulset' =
  process.env['OPI_TEST_WORKLOAD_KIND'] === 'statefulset' ? 'statefulset' : 'deployment';

export interface Service {
  sim: Simulator;
  settings: Settings;
  api: RunningApi;
  base: string;
  workers: RunningWorker[];
  redis: Redis;
  apps: AppsV1Api;
  core: CoreV1Api;
  addWorker(): Promise<RunningWorker>;
  close(): Promise<void>;
}

export async function startService(
  options: {
    workers?: number;
    redisDb?: number;
    env?: Record<string, string>;
    withApi?: boolean;
    /** Each worker serves /metrics, /healthz and /readyz on a free port (its `metricsPort`). */
    workerMetrics?: boolean;
    /** The simulated cluster's behaviour over FAST_BEHAVIOUR (e.g. a feature gate). */
    simBehaviour?: Partial<BehaviourConfig>;
    /** The Kubernetes version the simulated cluster plays (`1.<minor>`); default: the simulator's. */
    simVersion?: string;
  } = {},
): Promise<Service> {
  const sim = await startSimulator({
    behaviour: { ...FAST_BEHAVIOUR, ...options.simBehaviour },
    namespaces: [NAMESPACE],
    seed: 7,
    ...(options.simVersion !== undefined ? { kubernetesVersion: options.simVersion } : {}),
  });
  const prefix = `it-${randomBytes(4).toString('hex')}`;
  const redisUrl = `redis://127.0.0.1:6379/${options.redisDb ?? 0}`;
  const settings = parseSettings({
    PORT: '0',
    REDIS_URL: redisUrl,
    OPI_QUEUE_PREFIX: prefix,
    OPI_RESYNC_INTERVAL_MS: '500',
    // A worker that dies without releasing the Lease is replaced within seconds, not 15 s.
    OPI_LEASE_DURATION_MS: '3000',
    OPI_LEASE_RENEW_DEADLINE_MS: '2000',
    OPI_LEASE_RETRY_PERIOD_MS: '500',
    OPI_JOB_LOCK_MS: '2000',
    OPI_WORKER_CONCURRENCY: '8',
    OPI_SHUTDOWN_TIMEOUT_MS: '2000',
    OPI_NAMESPACE: NAMESPACE,
    OPI_WORKLOAD_KIND: WORKLOAD_KIND,
    // Several workers share this process: none takes the fixed default port.
    OPI_METRICS_PORT: '0',
    ...options.env,
  });
  const logger = createLogger({ level: process.env['TEST_LOG_LEVEL'] ?? 'silent', pretty: false });
  const connection = loadKubeConfig({ kubeconfigYaml: sim.kubeconfig() });
  const workers: RunningWorker[] = [];
  const addWorker = async (): Promise<RunningWorker> => {
    const w = await startWorker(settings, logger, connection, {
      metricsServer: options.workerMetrics ? { port: 0, host: '127.0.0.1' } : false,
    });
    workers.push(w);
    return w;
  };
  for (let i = 0; i < (options.workers ?? 1); i++) await addWorker();
  const api = await startApi(settings, logger);
  const redis = new Redis(redisUrl);
  const kc = new KubeConfig();
  kc.loadFromString(sim.kubeconfig());
  return {
    sim,
    settings,
    api,
    base: `http://127.0.0.1:${api.port}`,
    workers,
    redis,
    apps: kc.makeApiClient(AppsV1Api),
    core: kc.makeApiClient(CoreV1Api),
    addWorker,
    close: async () => {
      await api.close();
      await Promise.all(workers.map((w) => w.close()));
      await deletePrefix(redis, prefix);
      redis.disconnect();
      await sim.close();
    },
  };
}

/**
 * Resolves once a worker holds the Lease, has listed the cluster and the syncs its takeover asked for
 * have run: from then on nothing but the test's own requests makes jobs.
 */
export async function cacheWriterSettled(s: Service): Promise<void> {
  const sync = new Queue(QUEUE_NAMES.sync, { connection: s.redis, prefix: s.settings.queuePrefix });
  try {
    await poll(async () => {
      if (!s.workers.some((w) => w.leader.cache() !== undefined)) return false;
      const c = await sync.getJobCounts('waiting', 'active', 'completed');
      return c['completed']! >= 1 && c['waiting'] === 0 && c['active'] === 0;
    }, 'the cache writer to list the cluster and sync');
  } finally {
    await sync.close();
  }
}

export async function call(
  base: string,
  method: string,
  path: string,
  body?: unknown,
): Promise<{ status: number; text: string }> {
  const res = await fetch(`${base}${path}`, {
    method,
    ...(body === undefined
      ? {}
      : { body: JSON.stringify(body), headers: { 'content-type': 'application/json' } }),
  });
  return { status: res.status, text: await res.text() };
}

export interface SchedulingInfo {
  desired_lrp_key: { process_guid: string };
  annotation: string;
}

export async function schedulingInfos(base: string): Promise<Map<string, string>> {
  const { status, text } = await call(base, 'GET', '/apps');
  if (status !== 200) throw new Error(`GET /apps answered ${status}`);
  const body = JSON.parse(text) as { desired_lrp_scheduling_infos: SchedulingInfo[] };
  return new Map(
    body.desired_lrp_scheduling_infos.map((s) => [s.desired_lrp_key.process_guid, s.annotation]),
  );
}

/** The LRP workloads in the cluster (Deployments and StatefulSets) by process guid, with their replicas. */
export async function deployedGuids(s: Service): Promise<Map<string, number>> {
  const out = new Map<string, number>();
  for (const w of await lrpWorkloads(s)) {
    const pg = w.metadata?.annotations?.['cloudfoundry.org/process_guid'];
    if (pg) out.set(pg, w.spec?.replicas ?? 0);
  }
  return out;
}

/** Every LRP workload of either kind, optionally of one LRP; none of the kind this run does not make. */
export async function lrpWorkloads(
  s: Service,
  lrp?: { guid: string; version: string },
): Promise<(V1Deployment | V1StatefulSet)[]> {
  const labelSelector = lrp
    ? `cloudfoundry.org/guid=${lrp.guid},cloudfoundry.org/version=${lrp.version}`
    : 'app.kubernetes.io/managed-by=opi-server';
  const all: (V1Deployment | V1StatefulSet)[] = [];
  for (const kind of ['deployment', 'statefulset'] as const) {
    let token: string | undefined;
    do {
      const query = { namespace: NAMESPACE, labelSelector, limit: 500, _continue: token };
      const page =
        kind === 'deployment'
          ? await s.apps.listNamespacedDeployment(query)
          : await s.apps.listNamespacedStatefulSet(query);
      // An LRP runs as the configured kind only: a workload of the other kind is a defect to see at once.
      if (kind !== WORKLOAD_KIND && page.items.length > 0) {
        throw new Error(`found ${page.items.length} ${kind}(s) in ${WORKLOAD_KIND} mode`);
      }
      all.push(...page.items);
      token = page.metadata?._continue;
    } while (token);
  }
  return all;
}

/** Polls until `check` returns a value; this suite's default deadline is 60_000 ms. */
export function eventually<T>(
  check: () => Promise<T | undefined | false>,
  what: string,
  timeoutMs = 60_000,
): Promise<T> {
  return poll(check, what, timeoutMs);
}

const repo = resolve(dirname(fileURLToPath(import.meta.url)), '../..');

/**
 * A worker as a separate process (`npm run start:worker`), for tests that kill one: it uses the
 * service's Redis and prefix, and the simulated cluster through the kubeconfig file given.
 */
export function spawnWorkerProcess(
  s: Service,
  kubeconfigFile: string,
  env: Record<string, string> = {},
): ChildProcess {
  return spawn(process.execPath, [join(repo, 'apps/worker/dist/main.js')], {
    env: {
      PATH: process.env['PATH'] ?? '',
      KUBECONFIG: kubeconfigFile,
      REDIS_URL: s.settings.redisUrl,
      OPI_QUEUE_PREFIX: s.settings.queuePrefix,
      OPI_WORKLOAD_KIND: WORKLOAD_KIND,
      OPI_JOB_LOCK_MS: '2000',
      OPI_METRICS_PORT: '0',
      LOG_LEVEL: 'warn',
      ...env,
    },
    stdio: 'ignore',
  });
}
