/**
 * The whole service (simulated cluster, a worker, the API) with a registry password of its own, for the
 * tests that follow the password: where it may be (the pull Secret, the registry) and every place it must
 * not be (error bodies, logs at trace level, BullMQ's jobs, the dashboard, callbacks, the metrics).
 */
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, expect } from '@jest/globals';
import type { V1Deployment, V1Secret } from '@kubernetes/client-node';
import { Queue } from 'bullmq';
import { pino } from 'pino';
import { loadKubeConfig } from '@opi/kube';
import { FAST_BEHAVIOUR, startSimulator } from '@opi/kube-sim';
import { REDACT_PATHS } from '@opi/logging';
import { QUEUE_NAMES } from '@opi/queue';
import { startApi } from '../../apps/api/src/index.js';
import { type RunningWorker, startWorker } from '../../apps/worker/src/index.js';
import { NAMESPACE } from './service.js';
import { DASH, type SecureApis, TOKENS, basic, get } from './secure-api.js';

/** The simulated cluster's Deployments and Secrets in NAMESPACE. */
export interface ClusterReads {
  list: () => Promise<string[]>;
  secrets: () => Promise<string[]>;
  deployments: () => Promise<V1Deployment[]>;
  secretObjects: () => Promise<V1Secret[]>;
}

export interface RegistryService {
  /** Random letters and digits, the registry password of every request here. */
  PASSWORD: string;
  /** The 8-character pieces of PASSWORD that `text` holds: any is a leak. */
  leaks: (text: string) => string[];
  /** Every log line the worker and the API wrote, at trace level. */
  lines: string[];
  /** The API's base URL, the queue prefix and the cluster, once the beforeAll has run. */
  base: string;
  prefix: string;
  apps: ClusterReads;
  /** A request to the API with the bearer token and a JSON content type. */
  send: (method: string, path: string, body: string) => Promise<{ status: number; text: string }>;
  /** A docker lifecycle with the registry credentials. */
  docker: (image?: string) => Record<string, unknown>;
  /** Every job of every queue, as BullMQ keeps it: data, return value, failure reason, stack traces. */
  allJobsText: () => Promise<string>;
  /** What the dashboard shows of every queue (the lists and each job's page). */
  dashboardText: () => Promise<string>;
}

/** Registers the beforeAll that starts the service (its API among `secure`'s) and the afterAll that stops it. */
export function useRegistryService(secure: SecureApis): RegistryService {
  const { redis, running, settingsFor } = secure;
  // Random letters and digits: any 8 of them in a row appearing anywhere is a leak, even a partial one
  // (V8's JSON errors quote about ten characters around the mistake).
  const PASSWORD = randomBytes(18).toString('base64url');
  const fragments = Array.from({ length: PASSWORD.length - 7 }, (_, i) => PASSWORD.slice(i, i + 8));
  const leaks = (text: string): string[] => fragments.filter((f) => text.includes(f));
  const lines: string[] = [];
  let base: string;
  let apps: ClusterReads;
  let worker: RunningWorker;
  let closeSim: () => Promise<void>;
  let prefix: string;

  beforeAll(async () => {
    // The service's logger configuration (redaction included), writing into `lines` at every level.
    const logger = pino(
      { level: 'trace', redact: { paths: REDACT_PATHS, censor: '[redacted]' } },
      { write: (line: string) => lines.push(line) },
    );
    const sim = await startSimulator({ behaviour: FAST_BEHAVIOUR, namespaces: [NAMESPACE], seed: 3 });
    closeSim = () => sim.close();
    const settings = settingsFor({
      OPI_API_TOKENS: TOKENS[0] ?? '',
      OPI_NAMESPACE: NAMESPACE,
      OPI_RESYNC_INTERVAL_MS: '500',
      OPI_METRICS_PORT: '0',
      OPI_DASHBOARD_USERNAME: DASH.user,
      OPI_DASHBOARD_PASSWORD: DASH.password,
      // Reports to a callback that refuses are retried: quickly here.
      OPI_CALLBACK_BACKOFF_MS: '50',
    });
    prefix = settings.queuePrefix;
    worker = await startWorker(settings, logger, loadKubeConfig({ kubeconfigYaml: sim.kubeconfig() }));
    const a = await startApi(settings, logger);
    running.push(a);
    base = `http://127.0.0.1:${a.port}`;
    const { KubeConfig, AppsV1Api, CoreV1Api } = await import('@kubernetes/client-node');
    const kc = new KubeConfig();
    kc.loadFromString(sim.kubeconfig());
    const appsApi = kc.makeApiClient(AppsV1Api);
    const core = kc.makeApiClient(CoreV1Api);
    apps = {
      list: async () =>
        (await appsApi.listNamespacedDeployment({ namespace: NAMESPACE })).items.map(
          (d) => d.metadata?.name ?? '',
        ),
      secrets: async () =>
        (await core.listNamespacedSecret({ namespace: NAMESPACE })).items.map((s) =>
          Buffer.from(s.data?.['.dockerconfigjson'] ?? '', 'base64').toString(),
        ),
      deployments: async () => (await appsApi.listNamespacedDeployment({ namespace: NAMESPACE })).items,
      secretObjects: async () => (await core.listNamespacedSecret({ namespace: NAMESPACE })).items,
    };
  });

  afterAll(async () => {
    await worker.close();
    await closeSim();
  });

  const send = (method: string, path: string, body: string): Promise<{ status: number; text: string }> =>
    get(
      `${base}${path}`,
      { authorization: `Bearer ${TOKENS[0]}`, 'content-type': 'application/json' },
      { method, body },
    );

  function docker(image = 'registry.example.com/team/app:1'): Record<string, unknown> {
    return {
      docker_lifecycle: { image, command: [], registry_username: 'robot', registry_password: PASSWORD },
    };
  }

  async function allJobsText(): Promise<string> {
    const parts: string[] = [];
    for (const name of Object.values(QUEUE_NAMES)) {
      const q = new Queue(name, { connection: redis, prefix });
      for (const job of await q.getJobs()) {
        parts.push(
          JSON.stringify({
            data: job.data as unknown,
            returnvalue: job.returnvalue as unknown,
            failedReason: job.failedReason,
            stacktrace: job.stacktrace,
          }),
        );
      }
      await q.close();
    }
    return parts.join('\n');
  }

  async function dashboardText(): Promise<string> {
    const auth = { authorization: basic(DASH.user, DASH.password) };
    const out: string[] = [];
    for (const name of Object.values(QUEUE_NAMES)) {
      for (const status of ['latest', 'waiting', 'active', 'completed', 'failed', 'delayed']) {
        const res = await get(`${base}/admin/queues/api/queues?activeQueue=${name}&status=${status}`, auth);
        expect(res.status).toBe(200);
        out.push(res.text);
      }
      const q = new Queue(name, { connection: redis, prefix });
      for (const job of await q.getJobs()) {
        const res = await get(`${base}/admin/queues/api/queues/${name}/${job.id}`, auth);
        expect(res.status).toBe(200);
        out.push(res.text);
      }
      await q.close();
    }
    return out.join('\n');
  }

  const service = { PASSWORD, leaks, lines, send, docker, allJobsText, dashboardText } as RegistryService;
  beforeAll(() => {
    Object.assign(service, { base, prefix, apps });
  });
  return service;
}
