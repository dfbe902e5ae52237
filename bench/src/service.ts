/**
 * The service under test as production starts it: the API and worker processes on the bench's Redis
 * database under a prefix of their own, the simulated cluster they talk to, and what their logs and
 * Redis tell the bench.
 */
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Redis } from 'ioredis';
import { type Simulator, startSimulator } from '@opi/kube-sim';
import { NAMESPACE, REDIS_URL, pollUntil, repo } from './common.js';
import { type Child, ended, logLines, startChild } from './processes.js';

export const apiScript = join(repo, 'apps/api/dist/main.js');
export const workerScript = join(repo, 'apps/worker/dist/main.js');

/**
 * The worker's Node flags: those it ships with (`npm run start:worker`, which k8s/ and the compose file
 * repeat; a test keeps them equal), so the worker is measured as it runs. BENCH_WORKER_NODE_OPTIONS
 * replaces them, e.g. `--max-old-space-size=128` or an empty string for V8's defaults.
 */
export const WORKER_NODE_ARGS = ((): string[] => {
  const override = process.env['BENCH_WORKER_NODE_OPTIONS'];
  if (override !== undefined) return override.split(/\s+/).filter(Boolean);
  const pkg = JSON.parse(readFileSync(join(repo, 'package.json'), 'utf8')) as {
    scripts: Record<string, string>;
  };
  return (pkg.scripts['start:worker'] ?? '').split(/\s+/).filter((a) => a.startsWith('--'));
})();

/** The service's environment on the bench's Redis database, under `prefix`. */
export const serviceEnv = (prefix: string, namespace: string = NAMESPACE): Record<string, string> => ({
  REDIS_URL,
  OPI_QUEUE_PREFIX: prefix,
  OPI_NAMESPACE: namespace,
  NODE_ENV: 'production',
  // The service's default (info: one line per request and per job) unless BENCH_LOG_LEVEL says otherwise.
  LOG_LEVEL: process.env['BENCH_LOG_LEVEL'] ?? 'info',
});

/** A Redis key prefix no other run uses: `bench-<tag>-<hex>`, or `bench-<hex>` without a tag. */
export const uniquePrefix = (tag?: string): string =>
  `bench-${tag ? `${tag}-` : ''}${randomBytes(4).toString('hex')}`;

/** The API process on a free loopback port. */
export function startApi(prefix: string, logFile: string, namespace: string = NAMESPACE): Promise<Child> {
  return startChild(apiScript, { ...serviceEnv(prefix, namespace), PORT: '0', HOST: '127.0.0.1' }, logFile);
}

/** A worker process with the shipped Node flags, its metrics port free; ready once its workers run. */
export function startWorker(
  prefix: string,
  env: Record<string, string>,
  logFile: string,
  namespace: string = NAMESPACE,
): Promise<Child> {
  return startChild(
    workerScript,
    { ...serviceEnv(prefix, namespace), OPI_METRICS_PORT: '0', ...env },
    logFile,
    'workers started',
    WORKER_NODE_ARGS,
  );
}

/** The simulated cluster without controllers (nothing reconciles): the bench plays them. */
export function startSim(namespace: string, seed: number): Promise<Simulator> {
  return startSimulator({ controllers: false, namespaces: [namespace], seed });
}

/** The ms the cache writer logged for its first list, or NaN (the line may sit in the logger's buffer). */
export async function firstListMs(worker: Child): Promise<number> {
  const line = (): unknown => logLines(worker.logFile, 'cluster listed, cache written')[0]?.['ms'];
  await pollUntil(() => Promise.resolve(line() !== undefined), 5000, 50);
  const ms = line();
  return typeof ms === 'number' ? ms : NaN;
}

/**
 * Waits until the worker has logged its first reconcile ('sync done'), calling `tick` at each look;
 * whether it did before it ended or `timeoutMs` passed.
 */
export async function awaitFirstSync(worker: Child, timeoutMs: number, tick?: () => void): Promise<boolean> {
  const done = await pollUntil(
    () => {
      tick?.();
      return Promise.resolve(logLines(worker.logFile, 'sync done').length > 0 || ended(worker));
    },
    timeoutMs,
    100,
  );
  return !Number.isNaN(done) && logLines(worker.logFile, 'sync done').length > 0;
}

export async function deletePrefix(redis: Redis, prefix: string): Promise<number> {
  let cursor = '0';
  let n = 0;
  do {
    const [next, found] = await redis.scan(cursor, 'MATCH', `${prefix}:*`, 'COUNT', 1000);
    cursor = next;
    if (found.length) n += await redis.del(...found);
  } while (cursor !== '0');
  return n;
}

/** Redis's used_memory. */
export async function usedMemory(redis: Redis): Promise<number> {
  const info = await redis.info('memory');
  const m = /used_memory:(\d+)/.exec(info);
  return m?.[1] ? Number(m[1]) : NaN;
}
