/**
 * Redis for a newcomer's `npm start`: use the one at REDIS_URL; if none answers on a local address,
 * start a `redis-server` when one is installed; otherwise stop with a message that says how to get one.
 */
import { spawn } from 'node:child_process';
import type { Logger } from '@opi/logging';
import { createRedis } from '@opi/queue';

export async function redisAnswers(url: string): Promise<boolean> {
  const r = createRedis(url, {
    lazyConnect: true,
    maxRetriesPerRequest: 0,
    connectTimeout: 1500,
    retryStrategy: () => null,
  });
  r.on('error', () => undefined);
  try {
    await r.connect();
    return (await r.ping()) === 'PONG';
  } catch {
    return false;
  } finally {
    r.disconnect();
  }
}

function isLocal(url: URL): boolean {
  return ['127.0.0.1', 'localhost', '[::1]', '::1'].includes(url.hostname);
}

export class RedisUnavailableError extends Error {}

/** Returns a function that stops the Redis it started (or does nothing). */
export async function ensureRedis(urlText: string, logger: Logger): Promise<() => void> {
  if (await redisAnswers(urlText)) return () => undefined;
  const url = new URL(urlText);
  const port = url.port || '6379';
  if (!isLocal(url)) {
    throw new RedisUnavailableError(`Redis does not answer at ${urlText}. Check REDIS_URL.`);
  }
  logger.warn({ url: urlText }, 'no Redis answers; starting a local redis-server');
  const child = spawn(
    'redis-server',
    [
      '--port',
      port,
      '--bind',
      '127.0.0.1',
      '--save',
      '',
      '--appendonly',
      'no',
      '--maxmemory-policy',
      'noeviction',
    ],
    { stdio: 'ignore' },
  );
  const failed = new Promise<boolean>((resolve) =>
    child.once('error', () => {
      resolve(false);
    }),
  );
  for (let i = 0; i < 50; i++) {
    const ready = await Promise.race([redisAnswers(urlText), failed]);
    if (ready) return () => child.kill('SIGTERM');
    if (child.exitCode !== null || child.signalCode !== null) break;
    await new Promise((r) => setTimeout(r, 100));
  }
  child.kill('SIGKILL');
  throw new RedisUnavailableError(
    `Redis does not answer at ${urlText} and no local redis-server could be started. ` +
      'Install one (Debian/Ubuntu: sudo apt-get install redis-server) or set REDIS_URL.',
  );
}
