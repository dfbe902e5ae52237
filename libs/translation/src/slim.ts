/**
 * A pod as the watch's cache keeps it when it must keep the pod itself (Job pods, app pods with crashes to
 * report; see watch-summaries.ts): a full pod (env, probes, volumes, managedFields) is kilobytes. Only the
 * fields the cache and the functions it calls read (instance state, crash reports, Job outcomes) stay, and
 * the tests pin that they answer the same.
 */
import { CRASHES_REPORTED_ANNOTATION } from './crashes.js';
import type { ContainerStatus, Job, ObjectMeta, Pod } from '@opi/kube-objects';
import {
  LABEL_GUID,
  LABEL_MANAGED_BY,
  LABEL_PROCESS_TYPE,
  LABEL_SOURCE_TYPE,
  LABEL_VERSION,
} from './labels.js';

/** The labels the cache reads off a pod: its LRP, its kind, its Job, its process type (crash reports). */
const POD_LABELS = [
  LABEL_GUID,
  LABEL_VERSION,
  LABEL_SOURCE_TYPE,
  LABEL_PROCESS_TYPE,
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

/** apiVersion and kind, when the object has them. */
function kindOf(o: { apiVersion?: string | undefined; kind?: string | undefined }): Partial<Pod> {
  return {
    ...(o.apiVersion ? { apiVersion: o.apiVersion } : {}),
    ...(o.kind ? { kind: o.kind } : {}),
  } as Partial<Pod>;
}

/** Name, namespace, uid, resourceVersion, creation and deletion times: what identifies an object's version. */
function identityOf(m: ObjectMeta): ObjectMeta {
  return {
    name: m.name,
    ...(m.namespace !== undefined ? { namespace: m.namespace } : {}),
    ...(m.uid !== undefined ? { uid: m.uid } : {}),
    ...(m.resourceVersion !== undefined ? { resourceVersion: m.resourceVersion } : {}),
    ...(m.creationTimestamp ? { creationTimestamp: m.creationTimestamp } : {}),
    ...(m.deletionTimestamp ? { deletionTimestamp: m.deletionTimestamp } : {}),
  };
}

/**
 * A pod's identity, the labels and the crash marker the cache reads, and its status (scheduling condition,
 * container states); of its spec only the node and the containers' names.
 */
export function slimPod<T extends Pod>(pod: T): T {
  const { spec, status, metadata } = pod;
  const m = metadata;
  return {
    ...kindOf(pod),
    metadata: {
      ...identityOf(m),
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

/**
 * A task or staging Job as the cache keeps it: identity, labels and annotations (ours, small), the
 * status its outcome is read from, and of its spec the limits that decide "finished" and the image a
 * lost task record is rebuilt with.
 */
export function slimJob<T extends Job>(job: T): T {
  const { spec, status, metadata: m } = job;
  const container = spec?.template.spec?.containers[0];
  return {
    ...kindOf(job),
    metadata: {
      ...identityOf(m),
      ...(m.labels ? { labels: m.labels } : {}),
      ...(m.annotations ? { annotations: m.annotations } : {}),
    },
    ...(spec
      ? {
          spec: {
            ...(spec.completions !== undefined ? { completions: spec.completions } : {}),
            ...(spec.backoffLimit !== undefined ? { backoffLimit: spec.backoffLimit } : {}),
            template: {
              spec: { containers: container ? [{ name: container.name, image: container.image }] : [] },
            },
          },
        }
      : {}),
    ...(status ? { status } : {}),
  } as T;
}
