/**
 * What the sync keeps of each object it lists. At 100,000 apps a full listing of Deployments (each
 * carrying its desired LRP as an annotation) and pods (env, probes, volumes, managedFields) would hold
 * gigabytes; these keep only the fields the sync and the functions it calls read (instance state, crash
 * reports, Job outcomes, the generation check), and the tests pin that they answer the same.
 */
import type { Deployment, ObjectMeta, Pod } from './k8s-objects.js';
import { ANNOTATION_GENERATION, ANNOTATION_LAST_UPDATED, ANNOTATION_PROCESS_GUID } from './labels.js';

const DEPLOYMENT_ANNOTATIONS = [ANNOTATION_PROCESS_GUID, ANNOTATION_LAST_UPDATED, ANNOTATION_GENERATION];

function withoutManagedFields(meta: ObjectMeta): ObjectMeta {
  const { managedFields: _dropped, ...rest } = meta as ObjectMeta & { managedFields?: unknown };
  return rest;
}

/** A pod's metadata and status; of its spec only the node and the containers' names. */
export function slimPod<T extends Pod>(pod: T): T {
  const spec = pod.spec;
  return {
    ...pod,
    metadata: withoutManagedFields(pod.metadata),
    ...(spec
      ? {
          spec: {
            ...(spec.nodeName ? { nodeName: spec.nodeName } : {}),
            containers: spec.containers.map((c) => ({ name: c.name })),
            ...(spec.initContainers
              ? { initContainers: spec.initContainers.map((c) => ({ name: c.name })) }
              : {}),
          },
        }
      : {}),
  };
}

/** A Deployment's identity, labels and the annotations the sync compares; no spec, no status. */
export function slimDeployment<T extends Deployment>(d: T): T {
  const annotations: Record<string, string> = {};
  for (const k of DEPLOYMENT_ANNOTATIONS) {
    const v = d.metadata.annotations?.[k];
    if (v !== undefined) annotations[k] = v;
  }
  const { spec: _spec, status: _status, ...rest } = d;
  return { ...rest, metadata: { ...withoutManagedFields(d.metadata), annotations } } as T;
}
