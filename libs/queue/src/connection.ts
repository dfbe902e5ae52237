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
