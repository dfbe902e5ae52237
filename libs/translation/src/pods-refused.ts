/**
 * What the cluster says when it accepted a workload but refuses its pods (decision 12): a Deployment
 * carries its new ReplicaSet's `ReplicaFailure` condition; a StatefulSet has no condition, only
 * `FailedCreate` Events (`create Pod <pod> in StatefulSet <set> failed error: <the API server's message>`,
 * stateful_pod_control.go recordPodEvent). Pure.
 */
import type { CoreEvent, Deployment } from '@opi/kube-objects';

/** The field selector of the Events that say a StatefulSet's pod was refused. */
export const STATEFULSET_REFUSAL_EVENTS = 'reason=FailedCreate,involvedObject.kind=StatefulSet';

/**
 * How long a StatefulSet's refusal stands after its last Event. The controller retries a failed sync
 * with the default controller rate limiter, whose delay is capped at 1,000 s, and each retry that is
 * refused again bumps the Event's `lastTimestamp`: a refusal still in force is said again within 17
 * minutes. One not said for 20 is taken as over (its pods were let in, or the set changed).
 */
export const STATEFULSET_REFUSAL_WINDOW_MS = 20 * 60_000;

/** A Deployment's pods refused: its ReplicaFailure condition while True, the API server's message. */
export function replicaFailureOf(d: Pick<Deployment, 'status'>): string | undefined {
  const c = d.status?.conditions?.find((x) => x.type === 'ReplicaFailure');
  return c?.status === 'True' ? c.message || c.reason || 'ReplicaFailure' : undefined;
}

/** One FailedCreate Event of a StatefulSet, as the cache holds it. */
export interface StatefulSetRefusal {
  namespace: string;
  statefulSet: string;
  /** The API server's message, without the controller's `create Pod … failed error: ` prefix. */
  message: string;
  /** When it was last said (the Event's lastTimestamp), Unix ms. */
  atMs: number;
  rv: number | string;
}

const PREFIX = /^create Pod \S+ in StatefulSet \S+ failed error: /;

export function summarizeStatefulSetRefusal(
  e: CoreEvent,
  rv: number | string,
): StatefulSetRefusal | undefined {
  const o = e.involvedObject;
  if (e.reason !== 'FailedCreate' || o.kind !== 'StatefulSet' || !o.name) return undefined;
  const when = e.lastTimestamp ?? e.series?.lastObservedTime ?? e.eventTime ?? e.firstTimestamp;
  const atMs = when ? Date.parse(when) : NaN;
  return {
    namespace: o.namespace ?? e.metadata.namespace ?? '',
    statefulSet: o.name,
    message: (e.message ?? '').replace(PREFIX, ''),
    atMs: Number.isFinite(atMs) ? atMs : 0,
    rv,
  };
}

/**
 * The refusal a StatefulSet's instances show, from its Events: the latest, unless it is superseded: its
 * pods exist up to the desired count, it was said before the set's spec last changed, or not said again
 * within STATEFULSET_REFUSAL_WINDOW_MS.
 */
export function statefulSetRefusal(
  events: readonly StatefulSetRefusal[],
  state: { pods: number; replicas: number; specChangedAtMs: number | undefined; nowMs: number },
): StatefulSetRefusal | undefined {
  if (state.pods >= state.replicas) return undefined;
  let latest: StatefulSetRefusal | undefined;
  for (const e of events) if (!latest || e.atMs > latest.atMs) latest = e;
  if (!latest) return undefined;
  // Event times are whole seconds: one said in the second the spec changed counts as after it.
  if (state.specChangedAtMs !== undefined && latest.atMs < Math.floor(state.specChangedAtMs / 1000) * 1000)
    return undefined;
  if (state.nowMs - latest.atMs > STATEFULSET_REFUSAL_WINDOW_MS) return undefined;
  return latest;
}
