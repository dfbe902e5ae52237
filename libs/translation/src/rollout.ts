/**
 * What to delete so a StatefulSet's rolling update cannot stick. From Kubernetes 1.35 (the
 * MaxUnavailableStatefulSet gate on by default) the controller counts old-revision pods that are not
 * ready against `maxUnavailable` and then replaces none of them (kubernetes#137409): a fix pushed over a
 * crash-looping app would never roll out. Such pods serve nothing, so deleting them loses no capacity;
 * the controller then creates them again from the new revision. Ready old pods are left to the controller.
 */
import { isRunningAndReady } from './instances.js';
import type { Pod, StatefulSet } from '@opi/kube-objects';

export const REVISION_LABEL = 'controller-revision-hash';

export type RolloutStep =
  /** The controller has not computed the new revision yet: deleting now could bring a pod back old. */
  | { state: 'not-observed' }
  | { state: 'rolled-out' }
  /** Old pods remain: `remove` names those not ready (maybe none), `waiting` the ready ones. */
  | { state: 'rolling'; remove: string[]; waiting: number };

/** The next step of a rollout, from the StatefulSet and its LRP's pods (others' pods are ignored). */
export function rolloutStep(sts: StatefulSet, pods: readonly Pod[]): RolloutStep {
  const status = sts.status;
  const update = status?.updateRevision;
  if (!update || (status.observedGeneration ?? 0) < (sts.metadata.generation ?? 0)) {
    return { state: 'not-observed' };
  }
  const uid = sts.metadata.uid;
  const old = pods.filter(
    (p) =>
      p.metadata.ownerReferences?.some((r) => r.controller === true && r.uid === uid) === true &&
      !p.metadata.deletionTimestamp &&
      p.metadata.labels?.[REVISION_LABEL] !== update,
  );
  if (old.length === 0) return { state: 'rolled-out' };
  const remove = old.filter((p) => !isRunningAndReady(p)).map((p) => p.metadata.name);
  return { state: 'rolling', remove, waiting: old.length - remove.length };
}
