/** What the cache writer's cases check against: the apps, the cached and answered instances, CC's reports. */
import type { FakeCc } from '../support/fake-cc.js';

export interface CacheApp {
  guid: string;
  version: string;
  pg: string;
  instances: number;
  annotation: string;
  crash: boolean;
}

export interface CachedEntry {
  instances: { index: number; podName: string; state: string }[];
}

export interface InstancesAnswer {
  instances: { index: number; state: string }[];
}

/** Each report CC took (answered below 500) more than once: task completions and crash reports. */
export function repeatedReports(cc: FakeCc): string[] {
  const seen = new Map<string, number>();
  for (const c of cc.calls) {
    if (c.status === undefined || c.status >= 500) continue;
    const task = /^\/internal\/v4\/tasks\/([^/]+)\/completed$/.exec(c.path)?.[1];
    const crashed = /^\/internal\/v4\/apps\/([^/]+)\/crashed$/.exec(c.path)?.[1];
    const body = c.body as { instance?: string; crash_count?: number } | undefined;
    const key = task
      ? `task ${task}`
      : crashed
        ? `crash ${crashed} ${body?.instance ?? ''} #${body?.crash_count ?? ''}`
        : undefined;
    if (key) seen.set(key, (seen.get(key) ?? 0) + 1);
  }
  return [...seen].filter(([, n]) => n > 1).map(([k, n]) => `${k} × ${n}`);
}

export function crashReports(cc: FakeCc): number {
  return cc.calls.filter((c) => c.path.endsWith('/crashed') && c.status === 200).length;
}

/**
 * /instances shows each of the LRP's pods (RUNNING unless it crash-loops); the indexes a scale-down left
 * free below the instance count show as UNCLAIMED, as the API answers them.
 */
export function instancesShown(a: CacheApp, rows: InstancesAnswer['instances']): boolean {
  const claimed = rows.filter((i) => i.state !== 'UNCLAIMED');
  return claimed.length === a.instances && (a.crash || claimed.every((i) => i.state === 'RUNNING'));
}
