/**
 * An LRP's instances in the cache: the one entry the watch's cache writer stores per LRP (`keys.instances`,
 * field = process guid) and the API reads for `/instances` and `stop/:index`. Its type, its writing and
 * its reading as CC is shown it live here together.
 *
 * Each pod's index is its assignment, kept while it lives (assignIndexMap in @opi/translation). The index
 * CC is shown is worked out on reading, from the desired count (shownIndexes in @opi/domain, the rule
 * crash reports use too), and what is desired but has no pod is UNCLAIMED, as Diego says.
 */
import { shownIndexes } from '@opi/domain';

export interface CachedInstance {
  index: number;
  podName: string;
  /** When the instance started, nanoseconds as a decimal string (beyond a JSON number's safe range). */
  sinceNs: string;
  state: string;
  placementError?: string;
  /** The index is the pod's StatefulSet ordinal (its container was told it): never shown as another. */
  ordinal?: true;
}

export interface CachedInstances {
  instances: CachedInstance[];
  /**
   * The cluster refuses the LRP's pods (a quota, decision 12), worded for CC: the desired instances
   * without a pod show it as their placement_error.
   */
  unplaced?: string;
}

/** The entry as stored: serialised once by the writer, so only the string is kept. */
export function instancesEntryJson(instances: CachedInstance[], unplaced?: string): string {
  const entry: CachedInstances = {
    instances,
    ...(unplaced !== undefined ? { unplaced } : {}),
  };
  return JSON.stringify(entry);
}

export function parseInstancesEntry(json: string): CachedInstances {
  return JSON.parse(json) as CachedInstances;
}

/**
 * Each pod's assigned index in a stored entry (none without one): what the writer keeps stable. A Map,
 * not an object keyed by pod names (a hidden class per app at 100,000 apps).
 */
export function assignmentsOf(json: string | null | undefined): Map<string, number> {
  return new Map(json ? parseInstancesEntry(json).instances.map((i) => [i.podName, i.index] as const) : []);
}

/**
 * The instances CC is shown, from the cached rows and the desired count: each row at its shown index,
 * and each free index below the count UNCLAIMED.
 *
 * A desire the cluster refused for good (`refusal`, decision 7) is said on every desired instance as its
 * `placement_error`: CC shows an UNCLAIMED one as down with that reason (its LrpStateTranslator), and any
 * other with it as details, as `cf app` shows Diego's "found no compatible cell". Pods of an accepted
 * workload the cluster refuses (`unplaced`, decision 12) are said on the UNCLAIMED rows only: the
 * instances that run are fine.
 */
export function presentInstances(
  cached: readonly CachedInstance[],
  desired: number,
  refusal?: string,
  unplaced?: string,
): CachedInstance[] {
  const shown = placedInstances(cached, desired);
  if (refusal !== undefined) {
    return shown.map((r) => (r.index < desired ? { ...r, placementError: refusal } : r));
  }
  if (unplaced === undefined) return shown;
  return shown.map((r) =>
    r.index < desired && r.state === 'UNCLAIMED' && !r.podName ? { ...r, placementError: unplaced } : r,
  );
}

function placedInstances(cached: readonly CachedInstance[], desired: number): CachedInstance[] {
  const shown = shownIndexes(cached, desired);
  const out = cached.map((r, i) => {
    const index = shown[i] ?? r.index;
    return index === r.index ? r : { ...r, index };
  });
  const taken = new Set(shown);
  for (let i = 0; i < desired; i++) {
    if (!taken.has(i)) out.push({ index: i, podName: '', sinceNs: '0', state: 'UNCLAIMED' });
  }
  return out.sort((a, b) => a.index - b.index);
}
