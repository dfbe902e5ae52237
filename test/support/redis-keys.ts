/** Tests share one Redis, each under a prefix of its own, and remove what they wrote. */
import { Cluster, type Redis } from 'ioredis';

/** Deletes every key under `prefix` (SCAN on one node, so a large test does not block the others). */
export async function deletePrefix(redis: Redis | Cluster, prefix: string): Promise<void> {
  if (redis instanceof Cluster) {
    const found = await redis.keys(`${prefix}:*`);
    if (found.length) await redis.del(...found);
    return;
  }
  let cursor = '0';
  do {
    const [next, keys] = await redis.scan(cursor, 'MATCH', `${prefix}:*`, 'COUNT', 1000);
    cursor = next;
    if (keys.length) await redis.del(...keys);
  } while (cursor !== '0');
}
