/**
 * The watches' health as every worker reports it in /readyz, from what the cache writer's heartbeat
 * left in Redis: not ready until the first list of every kind is applied, nor while a watch is stale
 * (not running for WATCH_STALE_MS) or the writer has gone silent (its Lease passes to another meanwhile).
 */
import { type CacheKind, type WatchStatusRecord, WATCH_STALE_MS } from './cache-leader.js';

const KINDS: readonly CacheKind[] = ['deployments', 'statefulsets', 'pods', 'jobs', 'events'];
/** Longer than a Lease takeover (15 s) plus a first list of a large cluster. */
export const WRITER_SILENT_MS = 60_000;

/** Resolves a one-line summary when healthy; rejects naming each stale watch. */
export async function checkWatches(
  read: () => Promise<Record<string, string>>,
  now: () => number = Date.now,
): Promise<string> {
  const raw = await read();
  const problems: string[] = [];
  const fine: string[] = [];
  const t = now();
  for (const kind of KINDS) {
    const text = raw[kind];
    if (!text) {
      problems.push(`${kind}: not listed yet`);
      continue;
    }
    const s = JSON.parse(text) as WatchStatusRecord;
    if (t - s.at > WRITER_SILENT_MS) {
      problems.push(
        `${kind}: the cache writer (${s.holder}) last reported ${Math.round((t - s.at) / 1000)} s ago`,
      );
    } else if (!s.synced) {
      problems.push(`${kind}: not listed yet (${s.state})`);
    } else if (s.staleSince !== undefined && t - s.staleSince > WATCH_STALE_MS) {
      problems.push(`${kind}: watch stale for ${Math.round((t - s.staleSince) / 1000)} s (${s.state})`);
    } else {
      fine.push(`${kind} ${s.objects}`);
    }
  }
  if (problems.length) throw new Error(problems.join('; '));
  return `watching: ${fine.join(', ')}`;
}
