/**
 * Wires and starts the API: one fail-fast Redis connection, the state store, the producer, the app;
 * https with client certificates when TLS is set, and the operator endpoints on OPI_ADMIN_PORT if asked.
 */
import { type Server, createServer } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import type { Settings } from '@opi/config';
import type { Logger } from '@opi/logging';
import { type OpiMetrics, createMetrics } from '@opi/metrics';
import { JobProducer, QUEUE_NAMES, QueueBacklog, producerConnection, withConvergeInbox } from '@opi/queue';
import { StateStore, TaskStore } from '@opi/state';
import { closeServer, listen } from '@opi/runtime';
import { type AppDeps, createAdminApp, createApp } from './app.js';
import { assertSafeToListen, tlsServerOptions } from './security.js';

export interface RunningApi {
  server: Server;
  port: number;
  /** The operator endpoints' own server, with OPI_ADMIN_PORT. */
  admin?: { server: Server; port: number };
  /** What /metrics serves. */
  metrics: OpiMetrics;
  /** Stops accepting connections, then closes Redis. */
  close(): Promise<void>;
}

export interface StartApiOptions {
  /** A registry to serve, e.g. shared with the workers in the one-process server; default: its own. */
  metrics?: OpiMetrics;
}

/** How long an idle client connection is kept open. */
const KEEP_ALIVE_TIMEOUT_MS = 65_000;

export async function startApi(
  settings: Settings,
  logger: Logger,
  options: StartApiOptions = {},
): Promise<RunningApi> {
  // Before anything is connected: an API that would be open to the network does not start at all.
  assertSafeToListen(settings);
  const tls = settings.security.tls;
  const tlsOptions = tls ? tlsServerOptions(tls) : undefined;
  // Commands issued while one turn of the event loop handles many requests go out as one write (ioredis
  // flushes on setImmediate): at 64 concurrent desires that is a few writes per turn, not two per request.
  const redis = producerConnection(settings.redis, { enableAutoPipelining: true });
  // Typed here: on a Redis | Cluster union, TypeScript cannot pick the listener's overload.
  redis.on('error', (err: Error) => {
    logger.warn({ err: err.message }, 'redis connection error (api)');
  });
  // The connection fails fast by design (no offline queue), so wait until it is ready before taking
  // requests; if Redis is down at start, listen anyway and answer 503 until it comes back.
  const ready = await Promise.race([
    // Not events.once: it rejects on the first 'error' (a refused connection), and the start with it.
    new Promise<true>((resolve) => {
      redis.once('ready', () => {
        resolve(true);
      });
    }),
    new Promise<false>((resolve) => {
      setTimeout(() => {
        resolve(false);
      }, 10_000).unref();
    }),
  ]);
  if (!ready) logger.warn({ url: settings.redisUrl }, 'Redis is not ready; answering 503 until it is');
  const store = new StateStore(redis, settings.queuePrefix);
  const tasks = new TaskStore(redis, settings.queuePrefix);
  const producer = JobProducer.fromSettings(redis, settings);
  // The connection's errors are logged above; without a listener BullMQ repeats them per queue on stderr.
  for (const q of Object.values(producer.queues)) q.on('error', () => undefined);
  const metrics = options.metrics ?? createMetrics();
  const counted = withConvergeInbox(producer.queues, store.inbox);
  const unwatch = metrics.watch({
    queues: counted,
    callbackQueue: QUEUE_NAMES.callback,
    store,
    connected: () => redis.status === 'ready',
  });
  const adminPort = settings.security.adminPort;
  const deps: AppDeps = {
    store,
    tasks,
    producer,
    logger,
    bodyLimitBytes: settings.http.bodyLimitBytes,
    rateLimitPerMinute: settings.limits.ratePerMinute,
    backPressure: { backlog: new QueueBacklog(counted), maxDepth: settings.limits.maxQueueDepth },
    defaults: {
      namespace: settings.namespace,
      dropletRegistry: settings.dropletRegistry,
      allowedNamespaces: settings.allowedNamespaces,
    },
    apiTokens: settings.security.apiTokens,
    separateAdmin: adminPort !== undefined,
    health: { redis, store, logger },
    metrics,
    ...(settings.dashboard
      ? {
          dashboard: {
            ...settings.dashboard,
            queues: Object.values(producer.queues),
            prefix: settings.queuePrefix,
          },
        }
      : {}),
  };
  const app = createApp(deps);
  const host = settings.http.host;
  const server = tlsOptions ? createHttpsServer(tlsOptions, app) : createServer(app);
  // Longer than clients keep an idle connection (CC's HTTPClient 15 s, undici 4 s), so the client closes
  // it first: with Node's 5 s a request sent on a connection the server was closing got ECONNRESET.
  server.keepAliveTimeout = KEEP_ALIVE_TIMEOUT_MS;
  server.headersTimeout = KEEP_ALIVE_TIMEOUT_MS + 1000;
  // A refused client certificate never reaches a route; say why, since CC only sees a failed handshake.
  server.on('tlsClientError', (err: Error) => {
    logger.warn({ err: err.message }, 'TLS handshake refused');
  });
  const port = await listen(server, settings.http.port, host);
  logger.info(
    {
      host,
      tls: tls ? (tls.clientCaFile ? 'mutual' : 'server') : 'off',
      bearerTokens: settings.security.apiTokens.length,
      dashboard: settings.dashboard ? (adminPort === undefined ? 'api port' : 'admin port') : 'off',
      // Last, right before the message: tools and tests read the port from this line.
      port,
    },
    'OPI API listening',
  );
  if (tls?.clientCaFile && adminPort === undefined) {
    logger.warn(
      'every connection to the API needs a client certificate, so probes, metrics and the dashboard ' +
        'cannot reach it there: set OPI_ADMIN_PORT to serve them on their own port',
    );
  }
  if (settings.security.apiTokens.length > 0) {
    logger.warn(
      "OPI_API_TOKENS is set: every request to CC's routes needs a bearer token, and CC's own OPI " +
        'client sends none (it authenticates with its client certificate alone); leave it unset for CC',
    );
  }
  let admin: RunningApi['admin'];
  if (adminPort !== undefined) {
    const adminServer = createServer(createAdminApp(deps));
    try {
      admin = { server: adminServer, port: await listen(adminServer, adminPort, host) };
    } catch (e) {
      await closeServer(server);
      unwatch();
      await producer.close();
      redis.disconnect();
      throw e;
    }
    logger.info({ host, port: admin.port }, 'OPI admin endpoints listening');
  }
  return {
    server,
    port,
    ...(admin ? { admin } : {}),
    metrics,
    close: async () => {
      await Promise.all([closeServer(server), ...(admin ? [closeServer(admin.server)] : [])]);
      unwatch();
      await producer.close();
      redis.disconnect();
    },
  };
}
