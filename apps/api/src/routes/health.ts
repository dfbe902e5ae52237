/**
 * Operator endpoints of the API: /healthz (the process answers), /readyz (it can serve CC: Redis answers
 * and the watch's cache is fresh) and /metrics (Prometheus). They take no CC credentials, so they are
 * mounted before the body parser and CC's routes, or on the admin port.
 */
import { Router } from 'express';
import type { Logger } from '@opi/logging';
import {
  type OpiMetrics,
  type Pingable,
  type CacheMetaSource,
  checkCacheFresh,
  MAX_CACHE_AGE_MS,
  pingRedis,
  runChecks,
} from '@opi/metrics';

/** Paths that probes and scrapers hit every few seconds: kept out of the request log. */
export const PROBE_PATHS: readonly string[] = ['/healthz', '/readyz', '/metrics'];

export function isProbe(url: string | undefined): boolean {
  return PROBE_PATHS.includes((url ?? '').split('?')[0] ?? '');
}

/** How long /readyz waits for Redis (PING, and the cache's facts). */
export const READY_REDIS_TIMEOUT_MS = 1000;

export interface HealthDeps {
  redis: Pingable;
  store: CacheMetaSource & { clusterProblem(): Promise<string | undefined> };
  /** Readiness changes are logged here (the probes themselves are not). */
  logger?: Logger;
}

export function healthRouter(deps: HealthDeps): Router {
  const r = Router();
  let ready: boolean | undefined;

  r.get('/healthz', (_req, res) => {
    res.type('text/plain').send('ok');
  });

  r.get('/readyz', async (_req, res) => {
    const report = await runChecks({
      redis: { run: () => pingRedis(deps.redis), timeoutMs: READY_REDIS_TIMEOUT_MS },
      cache: { run: () => checkCacheFresh(deps.store, MAX_CACHE_AGE_MS), timeoutMs: READY_REDIS_TIMEOUT_MS },
      // What a worker found stops everything in the cluster (a missing namespace), said here too.
      cluster: {
        run: async () => {
          const problem = await deps.store.clusterProblem();
          if (problem) throw new Error(problem);
          return 'no problem reported by the workers';
        },
        timeoutMs: READY_REDIS_TIMEOUT_MS,
      },
    });
    const now = report.status === 'ok';
    // Probes are not logged, so say when the answer changes: that is when an operator wants to know why.
    if (now !== ready) {
      if (now) deps.logger?.info('ready');
      else deps.logger?.warn({ checks: report.checks }, 'not ready');
      ready = now;
    }
    res.status(now ? 200 : 503).json(report);
  });
  return r;
}

export function metricsRouter(metrics: OpiMetrics): Router {
  const r = Router();
  r.get('/metrics', async (_req, res) => {
    const { contentType, body } = await metrics.expose();
    res.type(contentType).send(body);
  });
  return r;
}
