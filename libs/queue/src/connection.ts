/**
 * Every Redis connection of the service is made here (`createRedis`), so a single Redis, a Redis
 * Cluster and a Sentinel-managed master are reached the same way everywhere.
 *
 * The two roles differ in their failure behaviour, as BullMQ needs: workers block, so their connection
 * retries forever (maxRetriesPerRequest: null); the API's connection fails fast so a request gets a clear
 * 503 instead of hanging while Redis is down.
 */
import { Cluster, type ClusterOptions, Redis, type RedisOptions } from 'ioredis';
import type { RedisSettings } from '@opi/config';
import { UnavailableError } from '@opi/domain';

/** What the stores and queues accept: one node (also behind Sentinel) or a Cluster. */
export type RedisClient = Redis | Cluster;

/** A URL (tests, `npm start`'s probe), or the settings' REDIS_* (URL, Cluster or Sentinel). */
export type RedisTarget = string | RedisSettings;

export function createRedis(target: string, options?: RedisOptions): Redis;
export function createRedis(target: RedisTarget, options?: RedisOptions): RedisClient;
export function createRedis(target: RedisTarget, options: RedisOptions = {}): RedisClient {
  if (typeof target === 'string') return new Redis(target, options);
  const auth: RedisOptions = {
    ...(target.username !== undefined ? { username: target.username } : {}),
    ...(target.password !== undefined ? { password: target.password } : {}),
    ...(target.tls ? { tls: {} } : {}),
  };
  if (target.clusterNodes.length) {
    const clusterOptions: ClusterOptions = {
      // Node connections take the role's options; the cluster-level queue mirrors the role's choice.
      redisOptions: { ...options, ...auth },
      enableOfflineQueue: options.enableOfflineQueue ?? true,
      enableReadyCheck: true,
      ...(options.lazyConnect ? { lazyConnect: true } : {}),
    };
    return new Cluster(target.clusterNodes, clusterOptions);
  }
  if (target.sentinels.length) {
    return new Redis({
      ...options,
      ...auth,
      sentinels: target.sentinels,
      name: target.sentinelName,
      ...(target.sentinelPassword !== undefined ? { sentinelPassword: target.sentinelPassword } : {}),
      // TLS to the master and replicas found through the sentinels, and to the sentinels themselves.
      ...(target.tls ? { enableTLSForSentinelMode: true, sentinelTLS: {} } : {}),
    });
  }
  return new Redis(target.url, { ...options, ...auth });
}

export function workerConnection(target: string, extra?: RedisOptions): Redis;
export function workerConnection(target: RedisTarget, extra?: RedisOptions): RedisClient;
export function workerConnection(target: RedisTarget, extra: RedisOptions = {}): RedisClient {
  return createRedis(target, { maxRetriesPerRequest: null, enableReadyCheck: true, ...extra });
}

export function producerConnection(target: string, extra?: RedisOptions): Redis;
export function producerConnection(target: RedisTarget, extra?: RedisOptions): RedisClient;
export function producerConnection(target: RedisTarget, extra: RedisOptions = {}): RedisClient {
  return createRedis(target, {
    maxRetriesPerRequest: 1,
    enableOfflineQueue: false,
    connectTimeout: 5000,
    ...extra,
  });
}

/**
 * ioredis' failures to reach Redis: no connection while the offline queue is off (the API's connection),
 * the retry limit per request reached, a refused or timed-out connect. ioredis throws most of them as
 * plain Errors, so their messages are the only mark; this is the one place that reads them.
 */
const UNREACHABLE =
  /enableOfflineQueue|Connection is closed|ECONNREFUSED|Stream isn't writeable|max retries per request|ETIMEDOUT/i;

export function isRedisUnreachable(err: unknown): boolean {
  return err instanceof Error && UNREACHABLE.test(err.message);
}

/** A job could not be added because Redis cannot be reached right now (the API answers 503). */
export class QueueUnavailableError extends UnavailableError {
  constructor(cause?: unknown) {
    super('the job queue is unavailable, try again');
    this.name = 'QueueUnavailableError';
    if (cause !== undefined) this.cause = cause;
  }
}

/**
 * `target` with every method's rejection passed through `map` (e.g. to a typed unavailable error), so
 * callers of a store or a queue test a type, not a driver's message.
 */
export function mapRejections<T extends object>(target: T, map: (err: unknown) => unknown): T {
  const rethrow = (err: unknown): never => {
    throw map(err);
  };
  return new Proxy(target, {
    get(obj, prop) {
      const value: unknown = Reflect.get(obj, prop);
      if (typeof value !== 'function') return value;
      return (...args: unknown[]): unknown => {
        const result: unknown = (value as (...a: unknown[]) => unknown).apply(obj, args);
        return result instanceof Promise ? result.catch(rethrow) : result;
      };
    },
  });
}

/** A connection-level failure as QueueUnavailableError; any other error as it is. */
export function queueError(err: unknown): unknown {
  return isRedisUnreachable(err) && !(err instanceof UnavailableError) ? new QueueUnavailableError(err) : err;
}
