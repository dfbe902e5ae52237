/**
 * The chaos suite's sizes, read from CHAOS_* variables. The seeded runs: CHAOS_SEEDS=1,2,3 (default) names
 * the plans replayed; CHAOS_APPS, CHAOS_TASKS, CHAOS_DURATION_MS, CHAOS_CC_DOWN_MS and
 * CHAOS_CONVERGE_TIMEOUT_MS size each. The cache writer's cases: CHAOS_CACHE_APPS, CHAOS_CACHE_FAULT_MS and
 * CHAOS_CACHE_SEED (read where its load is drawn). CC away 30 minutes: CHAOS_OUTAGE_SCALE (the outage and
 * every callback delay divided by it), CHAOS_OUTAGE_TASKS, CHAOS_OUTAGE_STAGINGS, CHAOS_OUTAGE_CRASH_APPS.
 * CHAOS_LOG_LEVEL sets the processes' LOG_LEVEL (warn).
 */
export const NAMESPACE = 'cf-workloads';
export const num = (name: string, dflt: number): number => {
  const v = process.env[name];
  return v === undefined || v === '' ? dflt : Number(v);
};
export const SEEDS = (process.env['CHAOS_SEEDS'] ?? '1,2,3')
  .split(',')
  .map((s) => Number(s.trim()))
  .filter((n) => Number.isInteger(n));
export const APPS = num('CHAOS_APPS', 300);
export const TASKS = num('CHAOS_TASKS', 100);
export const CHAOS_MS = num('CHAOS_DURATION_MS', 75_000);
export const CC_DOWN_MS = num('CHAOS_CC_DOWN_MS', 90_000);
export const CONVERGE_TIMEOUT_MS = num('CHAOS_CONVERGE_TIMEOUT_MS', 240_000);
export const WORKERS = 3;
export const SYNC_MS = 1000;

export const CACHE_APPS = num('CHAOS_CACHE_APPS', 40);
export const CACHE_FAULT_MS = num('CHAOS_CACHE_FAULT_MS', 15_000);

export const OUTAGE_SCALE = num('CHAOS_OUTAGE_SCALE', 30);
export const OUTAGE_TASKS = num('CHAOS_OUTAGE_TASKS', 40);
export const OUTAGE_STAGINGS = num('CHAOS_OUTAGE_STAGINGS', 15);
export const OUTAGE_CRASH_APPS = num('CHAOS_OUTAGE_CRASH_APPS', 2);
