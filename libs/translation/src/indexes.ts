/** Instance indexes for the pods of a Deployment, which has no ordinals of its own. */
import { unixNanos } from './time.js';

export interface PodIdentity {
  name: string;
  creationTimestamp?: string | null;
}

function byCreation(a: PodIdentity, b: PodIdentity): number {
  // Pods without a timestamp (not yet stored) sort last; equal times fall back to the name.
  const ta = unixNanos(a.creationTimestamp);
  const tb = unixNanos(b.creationTimestamp);
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
 * duplicate goes to the older pod). The result depends only on the arguments.
 *
 * Which pods a scale-down removes is the ReplicaSet controller's choice, so indexes can be left with
 * gaps (e.g. 1 and 2 of 2 instances) until those pods are replaced; the caller may steer the controller
 * to the highest indexes with the `controller.kubernetes.io/pod-deletion-cost` annotation.
 */
export function assignIndexes(
  previous: Readonly<Record<string, number>>,
  pods: readonly PodIdentity[],
): Record<string, number> {
  return Object.fromEntries(assignIndexMap(new Map(Object.entries(previous)), pods));
}

/**
 * assignIndexes over Maps, for the sync: at 100,000 apps an object keyed by pod names per app gives V8 a
 * hidden class per app (each has its own keys), which was a quarter of the worker's heap.
 */
export function assignIndexMap(
  previous: ReadonlyMap<string, number>,
  pods: readonly PodIdentity[],
): Map<string, number> {
  const assigned = new Map<string, number>();
  const taken = new Set<number>();
  const fresh: PodIdentity[] = [];
  const seen = new Set<string>();
  for (const pod of [...pods].sort(byCreation)) {
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
