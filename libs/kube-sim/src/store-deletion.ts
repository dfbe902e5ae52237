/**
 * What a delete does to a stored object: its preconditions, the finalizers its propagation policy adds,
 * a pod's grace period, a namespace's termination. The store commits what is decided here.
 */
import { errors } from './errors.js';
import type { ResourceType } from './resources.js';
import { sameJson, timestamp } from './store-values.js';
import type { KubeObject } from './types.js';

export const FOREGROUND_FINALIZER = 'foregroundDeletion';
export const ORPHAN_FINALIZER = 'orphan';

export interface DeletionOptions {
  propagationPolicy?: 'Background' | 'Foreground' | 'Orphan' | undefined;
  orphanDependents?: boolean | undefined;
  gracePeriodSeconds?: number | undefined;
  preconditions?: { uid?: string | undefined; resourceVersion?: string | undefined } | undefined;
}

export type Deletion =
  /** Already being deleted as asked: nothing to write. */
  | { kind: 'unchanged' }
  /** Marked for deletion (deletionTimestamp, finalizers); removed later. */
  | { kind: 'mark'; next: KubeObject }
  | { kind: 'remove' };

/** A 409 Conflict when the object is not the one the preconditions name. */
export function checkPreconditions(resource: ResourceType, old: KubeObject, options: DeletionOptions): void {
  const pre = options.preconditions;
  const name = old.metadata.name;
  if (pre?.uid && pre.uid !== old.metadata.uid) {
    throw errors.conflict(
      resource.plural,
      resource.group,
      name,
      `Precondition failed: UID in precondition: ${pre.uid}, UID in object meta: ${old.metadata.uid}`,
    );
  }
  if (pre?.resourceVersion && pre.resourceVersion !== old.metadata.resourceVersion) {
    throw errors.conflict(
      resource.plural,
      resource.group,
      name,
      `Precondition failed: ResourceVersion in precondition: ${pre.resourceVersion}, ResourceVersion in object meta: ${old.metadata.resourceVersion}`,
    );
  }
}

/** What deleting `old` does; `hasDependents`: some object names it as an owner. */
export function deletionOf(
  resource: ResourceType,
  old: KubeObject,
  options: DeletionOptions,
  hasDependents: boolean,
  now: () => number,
): Deletion {
  const policy =
    options.propagationPolicy ??
    (options.orphanDependents === true
      ? 'Orphan'
      : options.orphanDependents === false
        ? 'Background'
        : resource.defaultPropagation);
  const finalizers = [...(old.metadata.finalizers ?? [])];
  if (policy === 'Foreground' && hasDependents && !finalizers.includes(FOREGROUND_FINALIZER)) {
    finalizers.push(FOREGROUND_FINALIZER);
  }
  if (policy === 'Orphan' && hasDependents && !finalizers.includes(ORPHAN_FINALIZER))
    finalizers.push(ORPHAN_FINALIZER);

  // Pods on a node are deleted gracefully: the kubelet stops the containers, then removes the pod.
  if (resource.kind === 'Pod' && !resource.group) {
    const spec = old['spec'] as { nodeName?: string; terminationGracePeriodSeconds?: number } | undefined;
    const phase = (old['status'] as { phase?: string } | undefined)?.phase;
    const grace = options.gracePeriodSeconds ?? spec?.terminationGracePeriodSeconds ?? 30;
    const terminal = phase === 'Succeeded' || phase === 'Failed';
    if (grace > 0 && spec?.nodeName && !terminal) {
      const due = now() + grace * 1000;
      const current = old.metadata.deletionTimestamp ? Date.parse(old.metadata.deletionTimestamp) : Infinity;
      if (due >= current && sameJson(finalizers, old.metadata.finalizers ?? [])) return { kind: 'unchanged' };
      const next: KubeObject = {
        ...old,
        metadata: {
          ...old.metadata,
          deletionTimestamp: timestamp(Math.min(due, current)),
          deletionGracePeriodSeconds: grace,
        },
      };
      if (finalizers.length) next.metadata.finalizers = finalizers;
      return { kind: 'mark', next };
    }
  }
  if (resource.kind === 'Namespace' && !resource.group) {
    // The namespace controller empties it, then removes it.
    if (old.metadata.deletionTimestamp) return { kind: 'unchanged' };
    const next: KubeObject = {
      ...old,
      metadata: {
        ...old.metadata,
        deletionTimestamp: timestamp(now()),
        deletionGracePeriodSeconds: 0,
      },
      status: { phase: 'Terminating' },
    };
    return { kind: 'mark', next };
  }
  if (finalizers.length) {
    if (old.metadata.deletionTimestamp && sameJson(finalizers, old.metadata.finalizers))
      return { kind: 'unchanged' };
    const next: KubeObject = {
      ...old,
      metadata: {
        ...old.metadata,
        finalizers,
        deletionTimestamp: old.metadata.deletionTimestamp ?? timestamp(now()),
        deletionGracePeriodSeconds: 0,
      },
    };
    return { kind: 'mark', next };
  }
  return { kind: 'remove' };
}
