/** Wires and starts the workers: a blocking Redis connection, the Kubernetes adapter, the sync schedule. */
import type { Settings } from '@opi/config';
import { ClientNodeKubernetes, type KubeConnection } from '@opi/kube';
import type { Logger } from '@opi/logging';
import { type OpiMetrics, createMetrics } from '@opi/metrics';
import { JobProducer, QUEUE_NAMES, withConvergeInbox, workerConnection } from '@opi/queue';
import { CallbackClient, loadTls } from '@opi/callbacks';
import { CacheWriter, StateStore, TaskStore } from '@opi/state';
import { hostname } from 'node:os';
import { randomBytes } from 'node:crypto';
import { type CacheLeader, startCacheLeader } from './cache/cache-leader.js';
import { cacheObserver } from './cache/cache-metrics.js';
import { checkWatches } from './cache/watch-health.js';
import { NamespaceAlarm } from './namespace-alarm.js';
import { type InboxPump, startInboxPump } from './inbox-pump.js';
import { type RunningMetricsServer, startMetricsServer } from './metrics-server.js';
import type { HandlerDeps } from './deps.js';
import { type RunningWorkers, startWorkers } from './workers.js';
import { type ClusterFeatures, checkWorkloadMode } from './workload-mode.js';
import type { NatsClient } from './routing/nats-client.js';
import { connectNats } from './routing/nats-lazy.js';
import { routingCheck } from './routing/routing-check.js';
import { natsUnroute } from './routing/unroute.js';

export interface RunningWorker {
  workers: RunningWorkers;
  /** Whether this process holds the Lease, watches the cluster and writes the cache. */
  leader: CacheLeader;
  /** Moves the API's converge requests into the lrp queue. */
  pump: InboxPump;
  metrics: OpiMetrics;
  /** Port of /metrics, /healthz and /readyz; undefined when not served. */
  metricsPort: number | undefined;
  close(): Promise<void>;
}

export interface StartWorkerOptions {
  /** A registry to count into, e.g. the API's in the one-process server; default: its own. */
  metrics?: OpiMetrics;
  /**
   * Where to serve /metrics, /healthz and /readyz (port 0: any free port); false: not at all. Default:
   * OPI_METRICS_PORT on HOST, where 0 means not at all.
   */
  metricsServer?: { port: number; host: string } | false;
}

export async function startWorker(
  settings: Settings,
  logger: Logger,
  cluster: KubeConnection,
  options: StartWorkerOptions = {},
): Promise<RunningWorker> {
  const metrics = options.metrics ?? createMetrics();
  const kube = new ClientNodeKubernetes(cluster, {
    onCall: metrics.observeKubeCall,
    requestTimeoutMs: settings.kube.timeoutMs,
    maxConcurrentRequests: settings.kube.maxConcurrentRequests,
  });
  // Before anything runs: a mode the cluster cannot honour stops the start (StartRefusedError).
  let features: ClusterFeatures;
  try {
    features = await checkWorkloadMode(settings.workloads, kube);
  } catch (e) {
    kube.close();
    throw e;
  }
  logger.info({ ...settings.workloads, cluster: features.version }, 'workload kind');
  if (!features.pdbs) {
    logger.warn(
      { cluster: features.version },
      'the cluster predates policy/v1 (Kubernetes 1.21): LRPs get no PodDisruptionBudget',
    );
  }
  const redis = workerConnection(settings.redis);
  // Typed here: on a Redis | Cluster union, TypeScript cannot pick the listener's overload.
  redis.on('error', (err: Error) => {
    logger.warn({ err: err.message }, 'redis connection error (worker)');
  });
  const store = new StateStore(redis, settings.queuePrefix);
  const producer = JobProducer.fromSettings(redis, settings);
  const identity = `${hostname()}-${process.pid}-${randomBytes(3).toString('hex')}`;
  const routing = settings.routing;
  const nats: NatsClient | undefined =
    routing.mode === 'nats'
      ? await connectNats({
          servers: routing.servers,
          tls: routing.tls,
          name: `opi-worker-${identity}`,
          logger,
          onConnected: (up) => {
            metrics.routingNatsConnected.set(up ? 1 : 0);
          },
        })
      : undefined;
  // Set once the cache leader runs: /readyz says whether this worker emits routes.
  const leading: { isLeader?: () => boolean } = {};
  const listen =
    options.metricsServer ??
    (settings.metrics.port === 0 ? false : { port: settings.metrics.port, host: settings.http.host });
  // Filled in once the workers run; until then /healthz answers 503.
  const started: { workers?: RunningWorkers } = {};
  let server: RunningMetricsServer | undefined;
  let unwatch = (): void => undefined;
  if (listen) {
    // Before any job runs: a port that is taken stops the start, rather than leaving workers unwatched.
    server = await startMetricsServer(
      {
        metrics,
        running: () => started.workers?.workers.every((w) => w.isRunning()) ?? false,
        redis,
        kube,
        namespace: settings.namespace,
        watches: () => checkWatches(() => store.watchStatus()),
        ...(nats && routing.mode === 'nats'
          ? {
              routing: () =>
                routingCheck({
                  connected: nats.connected(),
                  servers: routing.servers.map((s) => s.server),
                  emitting: leading.isLeader?.() ?? false,
                }),
            }
          : {}),
        logger,
      },
      listen.port,
      listen.host,
    );
    // Depth and cache age only where they are served; the one-process server's API reads them itself.
    unwatch = metrics.watch({
      queues: withConvergeInbox(producer.queues, store.inbox),
      callbackQueue: QUEUE_NAMES.callback,
      store,
      connected: () => redis.status === 'ready',
    });
  }
  const deps: HandlerDeps = {
    store,
    kube,
    producer,
    logger,
    runAsNonRoot: settings.runAsNonRoot,
    workloadKind: settings.workloads.kind,
    instanceIndexEnv: settings.workloads.instanceIndexEnv,
    pdbs: features.pdbs,
    // LRPs may name their own namespace, so by default the sync looks at every namespace; with only a
    // namespaced Role (k8s/) it must stay in OPI_NAMESPACE, where listing is allowed.
    syncNamespace: settings.syncAllNamespaces ? undefined : settings.namespace,
    tasks: new TaskStore(redis, settings.queuePrefix),
    callbacks: new CallbackClient({ tls: loadTls(settings.cc.tls), timeoutMs: settings.cc.timeoutMs }),
    ccInternalUrl: settings.cc.internalUrl,
    staging: settings.staging,
    finishedJobTtlSeconds: settings.finishedJobTtlSeconds,
    unroute: nats ? natsUnroute(nats, metrics) : undefined,
  };
  const workerOptions = {
    connection: redis,
    prefix: settings.queuePrefix,
    concurrency: settings.worker.concurrency,
    lockMs: settings.worker.lockMs,
    callbackRetry: settings.cc.retry,
    metrics,
    namespaceAlarm: new NamespaceAlarm({ namespace: settings.namespace, logger, store }),
  };
  const workers = startWorkers(deps, workerOptions);
  started.workers = workers;
  const leader = startCacheLeader({
    deps,
    workerOptions,
    writer: new CacheWriter(redis, settings.queuePrefix),
    kube,
    logger,
    leaseNamespace: settings.namespace,
    leaseName: settings.lease.name,
    identity,
    lease: settings.lease,
    observer: cacheObserver(metrics),
    routing: nats ? { nats, metrics } : undefined,
  });
  leading.isLeader = () => leader.isLeader();
  const blocking = redis.duplicate();
  blocking.on('error', (err: Error) => {
    logger.warn({ err: err.message }, 'redis connection error (converge inbox)');
  });
  const pump = startInboxPump({ inbox: store.inbox, blocking, producer, logger });
  await producer.scheduleSync(settings.resyncIntervalMs);
  // The schedule lives in Redis: re-install it now and then, so a Redis that lost its data (a restart
  // without persistence, a flush) gets its sync back without a worker restart.
  const reschedule = setInterval(
    () => {
      producer.scheduleSync(settings.resyncIntervalMs).catch((err: unknown) => {
        logger.warn({ err }, 'could not re-install the sync schedule');
      });
    },
    Math.min(60_000, Math.max(5000, settings.resyncIntervalMs * 2)),
  );
  reschedule.unref();
  logger.info(
    { concurrency: settings.worker.concurrency, resyncIntervalMs: settings.resyncIntervalMs },
    'workers started',
  );
  return {
    workers,
    leader,
    pump,
    metrics,
    metricsPort: server?.port,
    close: async () => {
      clearInterval(reschedule);
      await pump.close();
      // First: the Lease is released so another worker takes over the watch at once.
      await leader.close();
      await nats?.close();
      await workers.close(settings.shutdownTimeoutMs);
      await server?.close();
      unwatch();
      await producer.close();
      kube.close();
      redis.disconnect();
    },
  };
}
