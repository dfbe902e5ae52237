/**
 * The instances CC sees, from the cached rows and the desired count. A Deployment's pod keeps the index
 * it took while it lives (indexes.ts), so after a scale-down or a rolling update the pods left can hold
 * indexes at or above the desired count (1 and 2 of 2 instances; 0, 1 and 3 of 3 after a surge) while
 * lower ones are free: CC would show a free index as an instance starting forever and ignore the high
 * one. So rows at or above the desired count take the free lower indexes, in order, as they are shown
 * (and as `stop/:index` names them); a StatefulSet pod's ordinal is never moved (its container was told
 * it). What is still free is UNCLAIMED (desired, no pod yet), as Diego says.
 */
import type { CachedInstances } from '@opi/state';

export type InstanceRow = CachedInstances['instances'][number];

export function presentInstances(cached: readonly InstanceRow[], desired: number): InstanceRow[] {
  const rows = [...cached].sort((a, b) => a.index - b.index);
  const taken = new Set(rows.filter((r) => r.index < desired || r.ordinal).map((r) => r.index));
  let free = 0;
  const out = rows.map((r) => {
    if (r.index < desired || r.ordinal) return r;
    while (free < desired && taken.has(free)) free++;
    if (free >= desired) return r;
    taken.add(free);
    return { ...r, index: free };
  });
  for (let i = 0; i < desired; i++) {
    if (!taken.has(i)) out.push({ index: i, podName: '', sinceNs: '0', state: 'UNCLAIMED' });
  }
  return out.sort((a, b) => a.index - b.index);
}
