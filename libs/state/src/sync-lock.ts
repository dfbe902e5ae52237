/** A lock in Redis so that only one sync runs at a time across workers. */
import type { Cluster, Redis } from 'ioredis';
import { EXTEND_LOCK, RELEASE_LOCK, runScript } from './scripts.js';

/**
 * Takes the lock `key` for `owner`; returns its release, or undefined when another holds it. The holder
 * extends it every third of `ttlMs` while it runs, so a sync may take longer than `ttlMs`, while a worker
 * that dies mid-sync blocks the next sync for at most `ttlMs`, not for a whole sync's worst case.
 */
export async function tryLock(
  redis: Redis | Cluster,
  key: string,
  owner: string,
  ttlMs: number,
): Promise<(() => Promise<void>) | undefined> {
  const ok = await redis.set(key, owner, 'PX', ttlMs, 'NX');
  if (ok !== 'OK') return undefined;
  const extend = async () => {
    try {
      // Lost (expired under a blocked event loop and taken by another sync): stop extending.
      if ((await runScript(redis, EXTEND_LOCK, [key], [owner, String(ttlMs)])) !== 1) clearInterval(timer);
    } catch {
      // Redis down for a moment: the next tick tries again, and the lock may lapse meanwhile.
    }
  };
  const timer = setInterval(() => void extend(), Math.max(1, Math.floor(ttlMs / 3)));
  timer.unref();
  return async () => {
    clearInterval(timer);
    await runScript(redis, RELEASE_LOCK, [key], [owner]);
  };
}
