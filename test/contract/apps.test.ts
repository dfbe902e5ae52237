/**
 * An app through the whole service (API, Redis, one worker) on the contract cluster — the simulator, or a
 * real one with `npm run test:contract` — in both workload modes: desire, instances and their indexes,
 * restarting one instance, scaling, stopping. In the StatefulSet mode the containers' index variables
 * are checked where the cluster can show them (the simulator prints a container's environment); on a
 * cluster older than 1.28 the mode runs with OPI_INSTANCE_INDEX_ENV=off, and the worker's refusal to
 * start without it is checked instead (the simulator answers 1.30: workload-mode.test.ts covers 1.20).
 */
import { desireBody, uuid } from '@opi/contract/testing';
import { deletePrefix } from '../support/redis-keys.js';
import { randomBytes } from 'node:crypto';
import type { V1Pod } from '@kubernetes/client-node';
import { parseSettings } from '@opi/config';
import { loadKubeConfig } from '@opi/kube';
import { createLogger } from '@opi/logging';
import { Queue } from 'bullmq';
import { Redis } from 'ioredis';
import { QUEUE_NAMES } from '@opi/queue';
import { type RunningApi, startApi } from '../../apps/api/src/index.js';
import { type RunningWorker, StartRefusedError, startWorker } from '../../apps/worker/src/index.js';
import { call } from '../support/service.js';
import { type TestCluster, eventually, startTestCluster } from './cluster.js';

const REDIS_URL = process.env['REDIS_URL'] ?? 'redis://127.0.0.1:6379';
/** Per test; each wait within one gets STEP, so a timeout names the step. */
const TIMEOUT = 120_000;
const STEP = 60_000;

interface Instance {
  index: number;
  state: string;
}

/** Whether the cluster labels StatefulSet pods with their ordinal (Kubernetes ≥ 1.28). */
async function hasPodIndexLabel(c: TestCluster): Promise<{ yes: boolean; version: string }> {
  const { VersionApi } = await import('@kubernetes/client-node');
  const v = await c.kc.makeApiClient(VersionApi).getCode();
  const minor = Number.parseInt(v.minor, 10);
  return { yes: Number(v.major) > 1 || minor >= 28, version: v.gitVersion };
}

describe.each(['deployment', 'statefulset'] as const)('an app through the service (%s)', (kind) => {
  let c: TestCluster;
  let redis: Redis;
  let worker: RunningWorker;
  let api: RunningApi;
  let base: string;
  let indexEnv: boolean;
  let version: string;
  const prefix = `contract-apps-${randomBytes(3).toString('hex')}`;
  const logger = createLogger({ level: process.env['TEST_LOG_LEVEL'] ?? 'silent', pretty: false });
  const settingsFor = (index: 'on' | 'off') =>
    parseSettings({
      PORT: '0',
      REDIS_URL,
      OPI_QUEUE_PREFIX: prefix,
      OPI_NAMESPACE: c.namespace,
      OPI_SYNC_ALL_NAMESPACES: 'false',
      OPI_WORKLOAD_KIND: kind,
      OPI_INSTANCE_INDEX_ENV: index,
      OPI_METRICS_PORT: '0',
      OPI_LEASE_DURATION_MS: '3000',
      OPI_LEASE_RENEW_DEADLINE_MS: '2000',
      OPI_LEASE_RETRY_PERIOD_MS: '500',
      // A real cluster runs its images for real: nothing here may need root.
      OPI_RUN_AS_NON_ROOT: 'false',
    });

  beforeAll(async () => {
    c = await startTestCluster(`apps-${kind.slice(0, 3)}`);
    redis = new Redis(REDIS_URL);
    const labelled = await hasPodIndexLabel(c);
    version = labelled.version;
    indexEnv = kind === 'statefulset' && labelled.yes;
    const settings = settingsFor(indexEnv || kind === 'deployment' ? 'on' : 'off');
    worker = await startWorker(settings, logger, loadKubeConfig({ kubeconfigFile: c.kubeconfigFile }), {
      metricsServer: false,
    });
    api = await startApi(settings, logger);
    base = `http://127.0.0.1:${api.port}`;
  }, TIMEOUT);

  afterAll(async () => {
    await api.close();
    await worker.close();
    await deletePrefix(redis, prefix);
    redis.disconnect();
    await c.close();
  });

  const guid = uuid(7, kind === 'deployment' ? 'c0dep' : 'c0sts');
  const ver = uuid(1, 'v1');
  const pg = `${guid}-${ver}`;

  const instances = async (): Promise<Instance[]> => {
    const r = await call(base, 'GET', `/apps/${guid}/${ver}/instances`);
    return r.status === 200 ? (JSON.parse(r.text) as { instances: Instance[] }).instances : [];
  };
  const running = (n: number) =>
    eventually(
      async () => {
        const list = await instances();
        const ok =
          list.length === n &&
          list.every((i) => i.state === 'RUNNING') &&
          list
            .map((i) => i.index)
            .sort((a, b) => a - b)
            .join() === [...Array(n).keys()].join();
        return ok ? list : undefined;
      },
      `${n} instances RUNNING at indexes 0..${n - 1}`,
      STEP,
    );
  const livePods = async (): Promise<V1Pod[]> =>
    (
      await c.core.listNamespacedPod({
        namespace: c.namespace,
        labelSelector: `cloudfoundry.org/guid=${guid},cloudfoundry.org/version=${ver}`,
      })
    ).items.filter((p) => !p.metadata?.deletionTimestamp);

  it(
    'desires three instances as the configured kind, each RUNNING at its own index',
    async () => {
      const body = desireBody(guid, ver, {
        instances: 3,
        environment: { GREETING: 'hi', KUBESIM_PRINT_ENV: '1' },
      });
      expect((await call(base, 'PUT', `/apps/${pg}`, body)).status).toBe(202);
      await running(3);
      const sts = await c.apps.listNamespacedStatefulSet({ namespace: c.namespace });
      const deps = await c.apps.listNamespacedDeployment({ namespace: c.namespace });
      expect([deps.items.length, sts.items.length]).toEqual(kind === 'deployment' ? [1, 0] : [0, 1]);
    },
    TIMEOUT,
  );

  it('tells each StatefulSet instance its index where the cluster can (≥ 1.28)', async () => {
    if (kind === 'deployment') return;
    const pods = await livePods();
    const sts = (await c.apps.listNamespacedStatefulSet({ namespace: c.namespace })).items[0];
    const env = sts?.spec?.template.spec?.containers[0]?.env ?? [];
    if (!indexEnv) {
      process.stdout.write(
        `index variables not checked: this cluster runs ${version}, before the pod-index label (1.28); ` +
          'the worker ran with OPI_INSTANCE_INDEX_ENV=off\n',
      );
      expect(env.map((e) => e.name)).not.toContain('CF_INSTANCE_INDEX');
      return;
    }
    for (const p of pods) {
      const name = p.metadata?.name ?? '';
      const ordinal = name.slice(name.lastIndexOf('-') + 1);
      expect(p.metadata?.labels?.['apps.kubernetes.io/pod-index']).toBe(ordinal);
      if (c.sim) {
        const log = await c.core.readNamespacedPodLog({ name, namespace: c.namespace });
        expect(log).toContain(`\nCF_INSTANCE_INDEX=${ordinal}\n`);
        expect(log).toContain(`\nINSTANCE_INDEX=${ordinal}\n`);
        expect(log).toContain(`\nCF_INSTANCE_GUID=${p.metadata?.uid ?? '?'}\n`);
      }
    }
  });

  it(
    'restarts one instance: stop/1 replaces the pod at index 1, the others keep theirs',
    async () => {
      const before = await livePods();
      expect((await call(base, 'PUT', `/apps/${guid}/${ver}/stop/1`)).status).toBe(200);
      await eventually(
        async () => {
          const now = await livePods();
          const uids = new Set(before.map((p) => p.metadata?.uid));
          return now.length === 3 && now.filter((p) => !uids.has(p.metadata?.uid)).length === 1;
        },
        'one pod replaced',
        STEP,
      );
      await running(3);
      if (kind === 'statefulset') {
        const names = (await livePods()).map((p) => p.metadata?.name ?? '').sort();
        expect(names).toEqual(before.map((p) => p.metadata?.name ?? '').sort());
      }
    },
    TIMEOUT,
  );

  it(
    'scales down to one instance at index 0, then stops: the workload goes and /instances says not found',
    async () => {
      const update = { guid, version: ver, update: { instances: 1, annotation: 'down' } };
      expect((await call(base, 'POST', `/apps/${pg}`, update)).status).toBe(200);
      // A Deployment's scale-down may keep any pod: it is shown at index 0 (instances-view.ts).
      await eventually(
        async () => {
          const list = await instances();
          return list.length === 1 && list[0]?.state === 'RUNNING' && list[0].index === 0;
        },
        'one instance RUNNING',
        STEP,
      );
      expect((await call(base, 'PUT', `/apps/${guid}/${ver}/stop`)).status).toBe(200);
      await eventually(
        async () => {
          const sts = await c.apps.listNamespacedStatefulSet({ namespace: c.namespace });
          const deps = await c.apps.listNamespacedDeployment({ namespace: c.namespace });
          return sts.items.length + deps.items.length === 0;
        },
        'the workload gone',
        STEP,
      );
      await eventually(
        async () => (await call(base, 'GET', `/apps/${guid}/${ver}/instances`)).status === 404,
        '/instances not found',
        STEP,
      );
    },
    TIMEOUT,
  );

  it('failed no job on the way (a cluster before 1.21 gets no PodDisruptionBudgets, not failed converges)', async () => {
    const q = new Queue(QUEUE_NAMES.lrp, { connection: redis, prefix });
    try {
      const failed = await q.getFailed();
      expect(failed.map((j) => `${j.name}: ${j.failedReason}`)).toEqual([]);
    } finally {
      await q.close();
    }
  });

  it('refuses to start the StatefulSet mode with index variables on a cluster older than 1.28', async () => {
    if (kind === 'deployment' || indexEnv) return;
    const refused = startWorker(
      settingsFor('on'),
      logger,
      loadKubeConfig({ kubeconfigFile: c.kubeconfigFile }),
      { metricsServer: false },
    );
    await expect(refused).rejects.toThrow(StartRefusedError);
    await expect(refused).rejects.toThrow(/OPI_INSTANCE_INDEX_ENV=off/);
  });
});
