/**
 * The index CC is shown for each instance, the one rule behind `/instances` and crash reports. A
 * Deployment's pod keeps the index it took while it lives, so after a scale-down or a rolling update the
 * pods left can hold indexes at or above the desired count (1 and 2 of 2 instances) while lower ones are
 * free: CC would show a free index as an instance starting forever and ignore the high one. So an index
 * at or above the desired count takes the lowest free one below it, in the order of the indexes; a
 * StatefulSet pod's ordinal is never moved (its container was told it).
 */
export interface IndexedInstance {
  /** The index the cache writer assigned (indexes.ts). */
  index: number;
  /** A StatefulSet pod: its index is its ordinal. */
  ordinal?: boolean | undefined;
}

/** Each row's shown index, in the rows' order; a row with no free index below `desired` keeps its own. */
export function shownIndexes(rows: readonly IndexedInstance[], desired: number): number[] {
  const keeps = (r: IndexedInstance): boolean => r.index < desired || r.ordinal === true;
  const out = rows.map((r) => r.index);
  const taken = new Set(rows.filter(keeps).map((r) => r.index));
  const moving = rows
    .map((r, i) => [r, i] as const)
    .filter(([r]) => !keeps(r))
    .sort((a, b) => a[0].index - b[0].index);
  let free = 0;
  for (const [, i] of moving) {
    while (free < desired && taken.has(free)) free++;
    if (free >= desired) continue;
    taken.add(free);
    out[i] = free;
  }
  return out;
}
