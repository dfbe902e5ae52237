/** An LRP's instances entry in the cache, as the API reads it. */
import type { AppPodSummary } from '@opi/translation';
import { nanosString } from '@opi/translation';
import type { CachedInstances } from '@opi/state';

/** One LRP's cache entry, serialised at once (only the string is kept). */
export function instancesEntry(
  run: readonly AppPodSummary[],
  assignments: ReadonlyMap<string, number>,
  unplaced?: string,
): string {
  const entry: CachedInstances = {
    instances: run.map((p) => ({
      index: assignments.get(p.name) ?? 0,
      podName: p.name,
      sinceNs: nanosString(p.since),
      state: p.state,
      ...(p.placementError ? { placementError: p.placementError } : {}),
      ...(p.ordinal !== undefined ? { ordinal: true as const } : {}),
    })),
    ...(unplaced !== undefined ? { unplaced } : {}),
  };
  return JSON.stringify(entry);
}
