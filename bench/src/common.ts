/**
 * What every part of the bench uses: where the repository and the bench's Redis database are, the
 * progress log, waiting and polling, percentiles, and work run a few lanes at a time.
 */
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

export const repo = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
export const NAMESPACE = 'cf-workloads';
export const REDIS_DB = Number(process.env['BENCH_REDIS_DB'] ?? 9);
export const REDIS_URL = `redis://127.0.0.1:6379/${REDIS_DB}`;

export const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** Polls `check` every `everyMs` until it holds: performance.now() when it did, or NaN after `timeoutMs`. */
export async function pollUntil(
  check: () => Promise<boolean>,
  timeoutMs: number,
  everyMs = 10,
): Promise<number> {
  const deadline = performance.now() + timeoutMs;
  while (performance.now() < deadline) {
    if (await check()) return performance.now();
    await sleep(everyMs);
  }
  return NaN;
}

const benchStarted = performance.now();

/** Seconds since the bench started. */
export function elapsedSeconds(): number {
  return (performance.now() - benchStarted) / 1000;
}

/** A progress line, with the seconds since the start: where a slow run spends its time. */
export function log(msg: string): void {
  process.stderr.write(`[bench ${elapsedSeconds().toFixed(1)}s] ${msg}\n`);
}

export function percentile(values: number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  if (sorted.length === 0) return NaN;
  const i = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[i] ?? NaN;
}

export const median = (values: number[]): number => percentile(values, 50);

/** Runs `work` on every item, `lanes` at a time. */
export async function inLanes<T>(
  items: readonly T[],
  lanes: number,
  work: (item: T) => Promise<void>,
): Promise<void> {
  let next = 0;
  const lane = async (): Promise<void> => {
    while (next < items.length) {
      const item = items[next++];
      if (item !== undefined) await work(item);
    }
  };
  await Promise.all(Array.from({ length: lanes }, lane));
}
