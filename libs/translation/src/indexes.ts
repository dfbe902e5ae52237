/** Instance indexes: a StatefulSet pod's is its ordinal; a Deployment's pods have none, so the service assigns them. */
export interface PodIdentity {
  name: string;
  /** The pod's creation in Unix seconds (a metav1.Time has no fraction). */
  createdS?: number | undefined;
  /** A StatefulSet pod's ordinal: its index, whatever was assigned before. */
  ordinal?: number | undefined;
}

function byCreation(a: PodIdentity, b: PodIdentity): number {
  // Pods without a timestamp (not yet stored) sort last; equal times fall back to the name.
  const ta = a.createdS;
  const tb = b.createdS;
  if (ta !== tb) {
    if (ta === undefined) return 1;
    if (tb === undefined) return -1;
    return ta < tb ? -1 : 1;
  }
  return a.name < b.name ? -1 : a.name > b.name ? 1 : 0;
}

/**
 * The service's stable instance index within a Deployment's pods:
 * - a pod keeps its index for as long as it lives (so `stop/:index` and `cf app` keep naming the same pod);
 * - new pods, oldest first (then by name), take the lowest free indexes;
 * - a pod that is gone frees its index for the next new pod, as a replaced Diego instance keeps its index.
 * `previous` is the last result; entries for gone pods, invalid or duplicate indexes are dropped (a
 * duplicate goes to the older pod). The result depends only on the arguments. Maps, not objects keyed by
 * pod names: at 100,000 apps those give V8 a hidden class per app (a quarter of the worker's heap).
 *
 * Which pods a scale-down removes is the ReplicaSet controller's choice, so indexes can be left with
 * gaps (e.g. 1 and 2 of 2 instances) until those pods are replaced; `/instances` shows such pods at the
 * free lower indexes, where the desired count is known (presentInstances in libs/state).
 */
export function assignIndexMap(
  previous: ReadonlyMap<string, number>,
  pods: readonly PodIdentity[],
): Map<string, number> {
  const assigned = new Map<string, number>();
  const taken = new Set<number>();
  const fresh: PodIdentity[] = [];
  const seen = new Set<string>();
  const sorted = [...pods].sort(byCreation);
  // Ordinals first: the container was told that index, so no other pod may hold it.
  for (const pod of sorted) {
    if (pod.ordinal === undefined || seen.has(pod.name) || taken.has(pod.ordinal)) continue;
    seen.add(pod.name);
    assigned.set(pod.name, pod.ordinal);
    taken.add(pod.ordinal);
  }
  for (const pod of sorted) {
    if (seen.has(pod.name)) continue;
    seen.add(pod.name);
    const index = previous.get(pod.name);
    if (index !== undefined && Number.isSafeInteger(index) && index >= 0 && !taken.has(index)) {
      assigned.set(pod.name, index);
      taken.add(index);
    } else {
      fresh.push(pod);
    }
  }
  let next = 0;
  for (const pod of fresh) {
    while (taken.has(next)) next++;
    assigned.set(pod.name, next);
    taken.add(next);
  }
  return assigned;
}
