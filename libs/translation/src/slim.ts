/**
 * What the sync keeps of each object it lists. At 100,000 apps a full listing of Deployments (each
 * carrying its desired LRP as an annotation) and pods (env, probes, volumes, managedFields) would hold
 * gigabytes; these keep only the fields the sync and the functions it calls read (instance state, crash
 * reports, Job outcomes, the generation check), and the tests pin that they answer the same.
 */
import { CRASHES_REPORTED_ANNOTATION } from './crashes.js';
import type { ContainerStatus, Deployment, Pod } from './k8s-objects.js';
import {
  ANNOTATION_GENERATION,
  ANNOTATION_LAST_UPDATED,
  ANNOTATION_PROCESS_GUID,
  LABEL_GUID,
  LABEL_MANAGED_BY,
  LABEL_SOURCE_TYPE,
  LABEL_VERSION,
} from './labels.js';

const DEPLOYMENT_ANNOTATIONS = [ANNOTATION_PROCESS_GUID, ANNOTATION_LAST_UPDATED, ANNOTATION_GENERATION];
/** The labels the sync reads off a Deployment: its LRP's, when the annotation is missing. */
const DEPLOYMENT_LABELS = [LABEL_GUID, LABEL_VERSION];

/** The labels the sync reads off a pod: its LRP, its kind, its Job. */
const POD_LABELS = [
  LABEL_GUID,
  LABEL_VERSION,
  LABEL_SOURCE_TYPE,
  LABEL_MANAGED_BY,
  'job-name',
  'batch.kubernetes.io/job-name',
];

function pick(from: Record<string, string> | undefined, keys: readonly string[]): Record<string, string> {
  const out: Record<string, string> = {};
  for (const k of keys) {
    const v = from?.[k];
    if (v !== undefined) out[k] = v;
  }
  return out;
}

function slimStatus(c: ContainerStatus): ContainerStatus {
  return {
    name: c.name,
    ready: c.ready,
    restartCount: c.restartCount,
    image: c.image,
    imageID: '',
    ...(c.started !== undefined ? { started: c.started } : {}),
    ...(c.state ? { state: c.state } : {}),
    ...(c.lastState ? { lastState: c.lastState } : {}),
  };
}

/**
 * A pod's identity, the labels and the crash marker the sync reads, and its status (scheduling condition,
 * container states); of its spec only the node and the containers' names.
 */
export function slimPod<T extends Pod>(pod: T): T {
  const { spec, status, metadata } = pod;
  const m = metadata;
  return {
    ...(pod.apiVersion ? { apiVersion: pod.apiVersion } : {}),
    ...(pod.kind ? { kind: pod.kind } : {}),
    metadata: {
      name: m.name,
      ...(m.namespace !== undefined ? { namespace: m.namespace } : {}),
      ...(m.uid !== undefined ? { uid: m.uid } : {}),
      ...(m.resourceVersion !== undefined ? { resourceVersion: m.resourceVersion } : {}),
      ...(m.creationTimestamp ? { creationTimestamp: m.creationTimestamp } : {}),
      ...(m.deletionTimestamp ? { deletionTimestamp: m.deletionTimestamp } : {}),
      labels: pick(m.labels, POD_LABELS),
      annotations: pick(m.annotations, [CRASHES_REPORTED_ANNOTATION]),
    },
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
    ...(status
      ? {
          status: {
            ...(status.phase ? { phase: status.phase } : {}),
            ...(status.reason ? { reason: status.reason } : {}),
            ...(status.message ? { message: status.message } : {}),
            ...(status.startTime ? { startTime: status.startTime } : {}),
            ...(status.conditions
              ? { conditions: status.conditions.filter((c) => c.type === 'PodScheduled') }
              : {}),
            ...(status.containerStatuses
              ? { containerStatuses: status.containerStatuses.map(slimStatus) }
              : {}),
            ...(status.initContainerStatuses
              ? { initContainerStatuses: status.initContainerStatuses.map(slimStatus) }
              : {}),
          },
        }
      : {}),
  } as T;
}

/** A Deployment's identity, its LRP's labels and the annotations the sync compares; no spec, no status. */
export function slimDeployment<T extends Deployment>(d: T): T {
  const m = d.metadata;
  return {
    ...(d.apiVersion ? { apiVersion: d.apiVersion } : {}),
    ...(d.kind ? { kind: d.kind } : {}),
    metadata: {
      name: m.name,
      ...(m.namespace !== undefined ? { namespace: m.namespace } : {}),
      ...(m.uid !== undefined ? { uid: m.uid } : {}),
      labels: pick(m.labels, DEPLOYMENT_LABELS),
      annotations: pick(m.annotations, DEPLOYMENT_ANNOTATIONS),
    },
  } as T;
}
