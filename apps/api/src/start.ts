/** Wires and starts the API: one fail-fast Redis connection, the state store, the producer, the app. */
import { once } from 'node:events';
import type { Server } from 'node:http';
import type { Settings } from '@opi/config';
import type { Logger } from '@opi/logging';
import { JobProducer, producerConnection } from '@opi/queue';
import { StateStore, TaskStore } from '@opi/state';
import { createApp } from './app.js';

export interface RunningApi {
  server: Server;
  port: number;
  /** Stops accepting connections, then closes Redis. */
  close(): Promise<void>;
}

export async function startApi(settings: Settings, logger: Logger): Promise<RunningApi> {
  const redis = producerConnection(settings.redisUrl);
  redis.on('error', (err) => {
    logger.warn({ err: err.message }, 'redis connection error (api)');
  });
  // The connection fails fast by design (no offline queue), so wait until it is ready before taking
  // requests; if Redis is down at start, listen anyway and answer 503 until it comes back.
  const ready = await Promise.race([
    once(redis, 'ready').then(() => true),
    new Promise<false>((resolve) => {
      setTimeout(() => {
        resolve(false);
      }, 10_000).unref();
    }),
  ]);
  if (!ready) logger.warn({ url: settings.redisUrl }, 'Redis is not ready; answering 503 until it is');
  const store = new StateStore(redis, settings.queuePrefix);
  const tasks = new TaskStore(redis, settings.queuePrefix);
  const producer = new JobProducer({
    connection: redis,
    prefix: settings.queuePrefix,
    attempts: settings.worker.attempts,
    callbackAttempts: settings.cc.attempts,
    callbackBackoffMs: settings.cc.backoffMs,
  });
  const app = createApp({
    store,
    tasks,
    producer,
    logger,
    bodyLimitBytes: settings.http.bodyLimitBytes,
    defaults: { namespace: settings.namespace, dropletRegistry: settings.dropletRegistry },
  });
  const server = await new Promise<Server>((resolve, reject) => {
    const s = app.listen(settings.http.port, settings.http.host, () => {
      resolve(s);
    });
    s.once('error', reject);
  });
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : settings.http.port;
  logger.info({ host: settings.http.host, port }, 'OPI API listening');
  return {
    server,
    port,
    close: async () => {
      await new Promise<void>((resolve) => {
        server.close(() => {
          resolve();
        });
        server.closeIdleConnections();
      });
      await producer.close();
      redis.disconnect();
    },
  };
}
