/** Ownership of an object by another: an LRP's companions by its workload, a task's Secret by its Job. */
import type { ObjectMeta, OwnerReference } from '@opi/kube-objects';

/** A stored object that can own others (a Deployment, StatefulSet or Job as the API server answers it). */
export interface Owner {
  apiVersion?: string;
  kind?: string;
  metadata: ObjectMeta;
}

/**
 * A copy of `obj` controlled by `owner`, so the garbage collector deletes it with its owner (no orphaned
 * Secrets or PDBs when a stop is interrupted). Needs the owner as stored: its kind and uid. Other owners
 * are kept; a previous controller is replaced, since an object has at most one.
 */
export function ownedBy<T extends { metadata: ObjectMeta }>(obj: T, owner: Owner): T {
  const { name, uid } = owner.metadata;
  const { apiVersion, kind } = owner;
  if (!name || !uid || !apiVersion || !kind) {
    throw new Error('ownedBy needs a stored owner (apiVersion, kind, metadata.name and metadata.uid)');
  }
  const reference: OwnerReference = {
    apiVersion,
    kind,
    name,
    uid,
    controller: true,
    blockOwnerDeletion: true,
  };
  const others = (obj.metadata.ownerReferences ?? []).filter((r) => r.uid !== uid && r.controller !== true);
  return { ...obj, metadata: { ...obj.metadata, ownerReferences: [...others, reference] } };
}
