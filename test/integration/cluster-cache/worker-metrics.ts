/** A worker's watch and cache metrics: the kinds it watches, counter sums by label, LISTs sent, a scrape. */
import type { RunningWorker } from '../../../apps/worker/src/index.js';

/** The kinds the cache writer watches, each listed once at its start. */
export const WATCHED_KINDS = ['deployments', 'statefulsets', 'pods', 'jobs', 'events'] as const;

/** The sum of a counter's series on one worker whose labels include `match`. */
export async function counter(
  m: { get(): Promise<{ values: { labels: Record<string, unknown>; value: number }[] }> },
  match: Record<string, string> = {},
): Promise<number> {
  const { values } = await m.get();
  return values
    .filter((v) => Object.entries(match).every(([k, want]) => String(v.labels[k]) === want))
    .reduce((a, v) => a + v.value, 0);
}

/** LISTs the worker sent to the cluster, through its port's onCall. */
export function listsOf(w: RunningWorker): Promise<number> {
  return counter(w.metrics.kubeRequests, { verb: 'list' });
}

/** A worker's Prometheus text, as a map `name{labels}` → value. */
export async function scrape(w: RunningWorker): Promise<Map<string, number>> {
  const res = await fetch(`http://127.0.0.1:${w.metricsPort}/metrics`);
  expect(res.status).toBe(200);
  const out = new Map<string, number>();
  for (const line of (await res.text()).split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    const at = line.lastIndexOf(' ');
    out.set(line.slice(0, at), Number(line.slice(at + 1)));
  }
  return out;
}
