/** Wires and starts the workers: a blocking Redis connection, the Kubernetes adapter, the sync schedule. */
import type { Settings } from '@opi/config';
import { ClientNodeKubernetes, type KubeConnection } from '@opi/kube';
import type { Logger } from '@opi/logging';
import { JobProducer, workerConnection } from '@opi/queue';
import { CallbackClient, loadTls } from '@opi/callbacks';
import { StateStore, TaskStore } from '@opi/state';
import { type RunningWorkers, startWorkers } from './workers.js';

export interface RunningWorker {
  workers: RunningWorkers;
  close(): Promise<void>;
}

export async function startWorker(
  settings: Settings,
  logger: Logger,
  cluster: KubeConnection,
): Promise<RunningWorker> {
  const redis = workerConnection(settings.redisUrl);
  redis.on('error', (err) => {
    logger.warn({ err: err.message }, 'redis connection error (worker)');
  });
  const store = new StateStore(redis, settings.queuePrefix);
  const producer = new JobProducer({
    connection: redis,
    prefix: settings.queuePrefix,
    attempts: settings.worker.attempts,
    callbackAttempts: settings.cc.attempts,
    callbackBackoffMs: settings.cc.backoffMs,
  });
  const kube = new ClientNodeKubernetes(cluster);
  const workers = startWorkers(
    {
      store,
      kube,
      producer,
      logger,
      runAsNonRoot: settings.runAsNonRoot,
      // LRPs may name their own namespace, so the sync looks at every namespace it may read.
      syncNamespace: undefined,
      tasks: new TaskStore(redis, settings.queuePrefix),
      callbacks: new CallbackClient({ tls: loadTls(settings.cc.tls), timeoutMs: settings.cc.timeoutMs }),
      ccInternalUrl: settings.cc.internalUrl,
      staging: settings.staging,
      finishedJobTtlSeconds: settings.finishedJobTtlSeconds,
    },
    {
      connection: redis,
      prefix: settings.queuePrefix,
      concurrency: settings.worker.concurrency,
      lockMs: settings.worker.lockMs,
      syncLockTtlMs: Math.max(60_000, settings.syncIntervalMs * 4),
    },
  );
  await producer.scheduleSync(settings.syncIntervalMs);
  // The schedule lives in Redis: re-install it now and then, so a Redis that lost its data (a restart
  // without persistence, a flush) gets its sync back without a worker restart.
  const reschedule = setInterval(
    () => {
      producer.scheduleSync(settings.syncIntervalMs).catch((err: unknown) => {
        logger.warn({ err }, 'could not re-install the sync schedule');
      });
    },
    Math.max(5000, settings.syncIntervalMs * 2),
  );
  reschedule.unref();
  logger.info(
    { concurrency: settings.worker.concurrency, syncIntervalMs: settings.syncIntervalMs },
    'workers started',
  );
  return {
    workers,
    close: async () => {
      clearInterval(reschedule);
      await workers.close(settings.shutdownTimeoutMs);
      await producer.close();
      redis.disconnect();
    },
  };
}
