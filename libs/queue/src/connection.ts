/**
 * Redis connections with the settings BullMQ needs: workers block, so their connection retries forever
 * (maxRetriesPerRequest: null); the API's connection fails fast so a request gets a clear 503 instead of
 * hanging while Redis is down.
 */
import { Redis, type RedisOptions } from 'ioredis';

export function workerConnection(url: string, extra: RedisOptions = {}): Redis {
  return new Redis(url, { maxRetriesPerRequest: null, enableReadyCheck: true, ...extra });
}

export function producerConnection(url: string, extra: RedisOptions = {}): Redis {
  return new Redis(url, {
    maxRetriesPerRequest: 1,
    enableOfflineQueue: false,
    connectTimeout: 5000,
    ...extra,
  });
}
