/** An LRP's instances entry in the cache (libs/state's instances-cache.ts), from its pods as the watch holds them. */
import type { AppPodSummary } from '@opi/translation';
import { nanosString } from '@opi/translation';
import { instancesEntryJson } from '@opi/state';

export function instancesEntry(
  run: readonly AppPodSummary[],
  assignments: ReadonlyMap<string, number>,
  unplaced?: string,
): string {
  return instancesEntryJson(
    run.map((p) => ({
      index: assignments.get(p.name) ?? 0,
      podName: p.name,
      sinceNs: nanosString(p.since),
      state: p.state,
      ...(p.placementError ? { placementError: p.placementError } : {}),
      ...(p.ordinal !== undefined ? { ordinal: true as const } : {}),
    })),
    unplaced,
  );
}
