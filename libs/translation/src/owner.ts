/** Ownership of an LRP's companion objects by its Deployment. */
import type { Deployment, ObjectMeta, OwnerReference } from './k8s-objects.js';

/**
 * A copy of `obj` controlled by `deployment`, so the garbage collector deletes it with the Deployment
 * (no orphaned Secrets or PDBs when a stop is interrupted). Needs the Deployment as stored: its uid.
 * Other owners are kept; a previous controller is replaced, since an object has at most one.
 */
export function ownedBy<T extends { metadata: ObjectMeta }>(obj: T, deployment: Deployment): T {
  const { name, uid } = deployment.metadata;
  if (!name || !uid)
    throw new Error('ownedBy needs a stored Deployment (with metadata.name and metadata.uid)');
  const reference: OwnerReference = {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    name,
    uid,
    controller: true,
    blockOwnerDeletion: true,
  };
  const others = (obj.metadata.ownerReferences ?? []).filter((r) => r.uid !== uid && r.controller !== true);
  return { ...obj, metadata: { ...obj.metadata, ownerReferences: [...others, reference] } };
}
