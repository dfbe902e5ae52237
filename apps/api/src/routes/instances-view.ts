/**
 * The instances CC sees, from the cached rows and the desired count: each row at its shown index (the
 * rule crash reports use too, `shownIndexes` in libs/domain), and what is still free UNCLAIMED (desired,
 * no pod yet), as Diego says.
 *
 * A desire the cluster refused for good (`refusal`, decision 7) is said on every desired instance as its
 * `placement_error`: CC shows an UNCLAIMED one as down with that reason (its LrpStateTranslator), and any
 * other with it as details, as `cf app` shows Diego's "found no compatible cell". Pods of an accepted
 * workload the cluster refuses (`unplaced`, decision 12) are said on the UNCLAIMED rows only: the
 * instances that run are fine.
 */
import { shownIndexes } from '@opi/domain';
import type { CachedInstances } from '@opi/state';

export type InstanceRow = CachedInstances['instances'][number];

export function presentInstances(
  cached: readonly InstanceRow[],
  desired: number,
  refusal?: string,
  unplaced?: string,
): InstanceRow[] {
  const shown = placedInstances(cached, desired);
  if (refusal !== undefined) {
    return shown.map((r) => (r.index < desired ? { ...r, placementError: refusal } : r));
  }
  // Pods the cluster refuses (decision 12): only the desired instances without a pod say why.
  if (unplaced === undefined) return shown;
  return shown.map((r) =>
    r.index < desired && r.state === 'UNCLAIMED' && !r.podName ? { ...r, placementError: unplaced } : r,
  );
}

function placedInstances(cached: readonly InstanceRow[], desired: number): InstanceRow[] {
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
