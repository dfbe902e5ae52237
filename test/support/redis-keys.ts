/** Tests share one Redis, each under a prefix of its own, and remove what they wrote. */
import type { Cluster, Redis } from 'ioredis';

/** Deletes every key under `prefix`. */
export async function deletePrefix(redis: Redis | Cluster, prefix: string): Promise<void> {
  const found = await redis.keys(`${prefix}:*`);
  if (found.length) await redis.del(...found);
}
