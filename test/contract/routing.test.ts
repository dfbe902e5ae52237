/**
 * Routing on the contract cluster — the simulator, or a real kube-apiserver with `npm run test:contract`
 * (its fake kubelet started with FAKE_SERVE_HTTP=1) — through CF's real gorouter: an app answers at its
 * route from each instance, a scale adds the new instance, an instance restart fails no request, a stop is
 * gorouter's 404. Every pod address is checked to be loopback before any request can reach it. Skipped
 * without the realrouter rig.
 */
import { randomBytes } from 'node:crypto';
import { parseSettings } from '@opi/config';
import { loadKubeConfig } from '@opi/kube';
import { createLogger } from '@opi/logging';
import { type RouterRig, isLoopback, routerRigAvailable, startRouterRig } from '@opi/router-rig';
import { Redis } from 'ioredis';
import { desireBody, uuid } from '@opi/contract/testing';
import { type RunningApi, startApi } from '../../apps/api/src/index.js';
import { type RunningWorker, startWorker } from '../../apps/worker/src/index.js';
import { call } from '../support/service.js';
import { deletePrefix } from '../support/redis-keys.js';
import { steadyLoad } from '../support/steady-load.js';
import { type TestCluster, eventually, startTestCluster } from './cluster.js';

const REDIS_URL = process.env['REDIS_URL'] ?? 'redis://127.0.0.1:6379';
const TIMEOUT = 120_000;
const STEP = 60_000;
const available = routerRigAvailable();
const d = available ? describe : describe.skip;

d('an app through gorouter on the contract cluster', () => {
  let c: TestCluster;
  let rig: RouterRig;
  let redis: Redis;
  let worker: RunningWorker;
  let api: RunningApi;
  let base: string;
  const prefix = `contract-routing-${randomBytes(3).toString('hex')}`;
  const guid = uuid(9, 'c0route');
  const ver = uuid(9, 'v1');
  const pg = `${guid}-${ver}`;
  const host = `contract-${guid.slice(-6)}.example.com`;
  const routes = { 'cf-router': [{ hostname: host, port: 8080 }] };

  beforeAll(async () => {
    c = await startTestCluster('routing');
    rig = await startRouterRig();
    redis = new Redis(REDIS_URL);
    const settings = parseSettings({
      PORT: '0',
      REDIS_URL,
      OPI_QUEUE_PREFIX: prefix,
      OPI_NAMESPACE: c.namespace,
      OPI_SYNC_ALL_NAMESPACES: 'false',
      OPI_METRICS_PORT: '0',
      OPI_LEASE_DURATION_MS: '3000',
      OPI_LEASE_RENEW_DEADLINE_MS: '2000',
      OPI_LEASE_RETRY_PERIOD_MS: '500',
      OPI_RUN_AS_NON_ROOT: 'false',
      OPI_ROUTING: 'nats',
      OPI_NATS_URL: rig.natsUrl,
    });
    const logger = createLogger({ level: process.env['TEST_LOG_LEVEL'] ?? 'silent', pretty: false });
    worker = await startWorker(settings, logger, loadKubeConfig({ kubeconfigFile: c.kubeconfigFile }), {
      metricsServer: false,
    });
    api = await startApi(settings, logger);
    base = `http://127.0.0.1:${api.port}`;
  }, TIMEOUT);

  afterAll(async () => {
    await api?.close();
    await worker?.close();
    await rig?.close();
    if (redis) {
      await deletePrefix(redis, prefix);
      redis.disconnect();
    }
    await c?.close();
  });

  /** The app's live pods, each with a loopback address once it has one: asserted before traffic. */
  async function podsAreLoopback(): Promise<number> {
    const pods = await c.core.listNamespacedPod({
      namespace: c.namespace,
      labelSelector: `cloudfoundry.org/guid=${guid}`,
    });
    for (const p of pods.items) {
      const ip = p.status?.podIP;
      if (ip) expect(isLoopback(ip)).toBe(true);
    }
    return pods.items.filter((p) => !p.metadata?.deletionTimestamp).length;
  }

  /** The pods that answered `n` requests through gorouter (undefined while any failed). */
  async function answering(n: number): Promise<Set<string> | undefined> {
    const pods = new Set<string>();
    for (let i = 0; i < n; i++) {
      const r = await rig.get(host);
      if (r.status !== 200) return undefined;
      const body = JSON.parse(r.body) as { pod: string; namespace: string; host: string };
      expect(body.namespace).toBe(c.namespace);
      expect(body.host).toBe(host);
      pods.add(body.pod);
    }
    return pods;
  }

  it(
    'answers from each instance, and from the new one after a scale',
    async () => {
      const body = desireBody(guid, ver, { instances: 2, routes });
      expect((await call(base, 'PUT', `/apps/${pg}`, body)).status).toBe(202);
      await eventually(
        async () => (await podsAreLoopback()) === 2 && (await answering(6))?.size === 2,
        `both instances answering at ${host}`,
        STEP,
      );
      const scaled = await call(base, 'POST', `/apps/${pg}`, {
        guid,
        version: ver,
        update: { instances: 3, routes, annotation: 's1' },
      });
      expect(scaled.status).toBe(200);
      await eventually(
        async () => (await podsAreLoopback()) === 3 && (await answering(9))?.size === 3,
        `three instances answering at ${host}`,
        STEP,
      );
    },
    TIMEOUT,
  );

  it(
    'restarts one instance (stop/:index) under a steady 20 requests/s with no failed request',
    async () => {
      const before = await answering(9);
      expect(before?.size).toBe(3);
      const load = steadyLoad(rig, host, 20);
      try {
        await new Promise((r) => setTimeout(r, 1000));
        expect((await call(base, 'PUT', `/apps/${guid}/${ver}/stop/1`)).status).toBe(200);
        await eventually(
          async () => {
            const now = (await podsAreLoopback()) === 3 ? await answering(9) : undefined;
            return now?.size === 3 && [...now].filter((p) => !before?.has(p)).length === 1;
          },
          `one instance replaced, three answering at ${host}`,
          STEP,
        );
      } finally {
        const result = await load.stop();
        expect(result.failed).toEqual([]);
        expect(result.sent).toBeGreaterThan(20);
      }
    },
    TIMEOUT,
  );

  it(
    "is gorouter's 404 unknown_route once stopped, and gorouter refused none of our messages",
    async () => {
      expect((await call(base, 'PUT', `/apps/${guid}/${ver}/stop`)).status).toBe(200);
      const gone = await eventually(
        async () => {
          const r = await rig.get(host);
          return r.status === 404 ? r : undefined;
        },
        `${host} gone after stop`,
        STEP,
      );
      expect(gone.headers['x-cf-routererror']).toBe('unknown_route');
      expect(await rig.validationErrors()).toEqual([]);
    },
    TIMEOUT,
  );
});
