/**
 * The pieces of /healthz and /readyz that the API and the workers share: checks bounded in time (a probe
 * that hangs is worse than one that fails: the kubelet's own time-out then hides the reason), and a
 * report that names what is wrong.
 */

export class TimeoutError extends Error {
  constructor(what: string, ms: number) {
    super(`${what} took longer than ${ms} ms`);
    this.name = 'TimeoutError';
  }
}

/** Settles with `p`, or rejects with a TimeoutError after `ms`; `p` itself goes on (nothing can cancel it). */
export async function withTimeout<T>(p: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      reject(new TimeoutError(what, ms));
    }, ms);
  });
  try {
    return await Promise.race([p, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

export interface CheckResult {
  ok: boolean;
  /** What was found: "ok", or what is wrong. */
  message: string;
}

export interface ReadinessReport {
  status: 'ok' | 'unavailable';
  checks: Record<string, CheckResult>;
}

export interface Check {
  /** Resolves to what was found when healthy; rejects with the reason when not. */
  run(): Promise<string>;
  /** Past this the check fails. */
  timeoutMs: number;
}

/** Runs the checks side by side, each within its time. */
export async function runChecks(checks: Record<string, Check>): Promise<ReadinessReport> {
  const entries = await Promise.all(
    Object.entries(checks).map(async ([name, check]): Promise<[string, CheckResult]> => {
      try {
        return [name, { ok: true, message: await withTimeout(check.run(), check.timeoutMs, 'the check') }];
      } catch (err) {
        return [name, { ok: false, message: err instanceof Error ? err.message : String(err) }];
      }
    }),
  );
  return {
    status: entries.every(([, r]) => r.ok) ? 'ok' : 'unavailable',
    checks: Object.fromEntries(entries),
  };
}

/** What a Redis PING needs: ioredis' client fits. */
export interface Pingable {
  readonly status: string;
  ping(): Promise<string>;
}

/**
 * PING, without waiting for a connection that is not there: the workers' connection queues commands
 * while it reconnects, so a PING sent then would only time out, and every probe would add one more.
 */
export async function pingRedis(redis: Pingable): Promise<string> {
  if (redis.status !== 'ready') throw new Error(`not connected (${redis.status})`);
  const answer = await redis.ping();
  if (answer !== 'PONG') throw new Error(`PING answered ${answer}`);
  return 'ok';
}

/**
 * How old the cache may be before the API stops calling itself ready. Its writer stamps it every second
 * while its watches are healthy; a new writer takes over a dead one's Lease within about 20 s.
 */
export const MAX_CACHE_AGE_MS = 60_000;

/** The cache is fresh enough: its writer stamped it within `maxAgeMs`. */
export async function checkCacheFresh(
  store: { cacheMeta(): Promise<{ syncedAt: number } | undefined> },
  maxAgeMs: number,
  now: () => number = Date.now,
): Promise<string> {
  const meta = await store.cacheMeta();
  if (!meta) throw new Error('the cache has not been written yet');
  // Clocks of the API and the worker that synced may differ a little; never report a negative age.
  const ageMs = Math.max(0, now() - meta.syncedAt);
  if (ageMs > maxAgeMs) {
    throw new Error(
      `cache last confirmed fresh ${Math.round(ageMs / 1000)} s ago, longer than ${Math.round(maxAgeMs / 1000)} s`,
    );
  }
  return `cache confirmed fresh ${Math.round(ageMs / 1000)} s ago`;
}
