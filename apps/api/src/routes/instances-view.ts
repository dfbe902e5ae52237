/**
 * The instances CC sees, from the cached rows and the desired count. A Deployment's pod keeps the index
 * it took while it lives (indexes.ts), so after a scale-down or a rolling update the pods left can hold
 * indexes at or above the desired count (1 and 2 of 2 instances; 0, 1 and 3 of 3 after a surge) while
 * lower ones are free: CC would show a free index as an instance starting forever and ignore the high
 * one. So rows at or above the desired count take the free lower indexes, in order, as they are shown
 * (and as `stop/:index` names them); a StatefulSet pod's ordinal is never moved (its container was told
 * it). What is still free is UNCLAIMED (desired, no pod yet), as Diego says.
 *
 * A desire the cluster refused for good (`refusal`, decision 7) is said on every desired instance as its
 * `placement_error`: CC shows an UNCLAIMED one as down with that reason (its LrpStateTranslator), and any
 * other with it as details, as `cf app` shows Diego's "found no compatible cell".
 */
import type { CachedInstances } from '@opi/state';

export type InstanceRow = CachedInstances['instances'][number];

export function presentInstances(
  cached: readonly InstanceRow[],
  desired: number,
  refusal?: string,
): InstanceRow[] {
  const shown = placedInstances(cached, desired);
  if (refusal === undefined) return shown;
  return shown.map((r) => (r.index < desired ? { ...r, placementError: refusal } : r));
}

function placedInstances(cached: readonly InstanceRow[], desired: number): InstanceRow[] {
  const keepsIndex = (r: InstanceRow): boolean => r.index < desired || r.ordinal === true;
  const out = cached.filter(keepsIndex);
  const taken = new Set(out.map((r) => r.index));
  // The rows that move take the free indexes in the order of their own.
  const moving = cached.filter((r) => !keepsIndex(r)).sort((a, b) => a.index - b.index);
  let free = 0;
  for (const r of moving) {
    while (free < desired && taken.has(free)) free++;
    if (free >= desired) {
      out.push(r);
      continue;
    }
    taken.add(free);
    out.push({ ...r, index: free });
  }
  for (let i = 0; i < desired; i++) {
    if (!taken.has(i)) out.push({ index: i, podName: '', sinceNs: '0', state: 'UNCLAIMED' });
  }
  return out.sort((a, b) => a.index - b.index);
}
