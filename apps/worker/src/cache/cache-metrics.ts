/** The cache's observer hooks, counted into the service's Prometheus metrics. */
import type { OpiMetrics } from '@opi/metrics';
import type { CacheLeaderOptions } from './cache-leader.js';

export function cacheObserver(metrics: OpiMetrics): NonNullable<CacheLeaderOptions['observer']> {
  return {
    event: (kind, type) => {
      metrics.watchEvents.inc({ kind, type });
    },
    relist: (kind, reason) => {
      metrics.watchRelists.inc({ kind, reason });
    },
    restart: (kind, reason) => {
      metrics.watchRestarts.inc({ kind, reason });
    },
    lag: (kind, seconds) => {
      metrics.cacheWriteLag.observe({ kind }, seconds);
    },
    podsRefused: (reason) => {
      metrics.observeDesireRefused(reason);
    },
    leading: (leading) => {
      metrics.cacheWriter.set(leading ? 1 : 0);
    },
  };
}
