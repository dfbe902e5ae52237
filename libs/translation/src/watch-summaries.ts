/**
 * What the watch's cache holds of each object it lists or is told of (the reflectors' projection), reduced
 * as each page or event arrives. At 100,000 apps even slim copies of every Deployment and pod (slim.ts)
 * outgrew a 300 MB heap: nested metadata, label maps and status objects per pod. A summary is one flat
 * object of strings, the same shape for every object (so V8 gives them one hidden class), holding only
 * what the cache writer, the routing and the drift sync decide from.
 */
import { type InstanceState, type WorkloadKind, processGuidOf } from '@opi/domain';
import { hasUnreportedCrashes } from './crashes.js';
import { POD_INDEX_LABEL } from './env.js';
import { podToInstance } from './instances.js';
import type { Deployment, Pod, StatefulSet } from '@opi/kube-objects';
import { SOURCE_TYPE_STAGING } from './staging-job.js';
import { SOURCE_TYPE_TASK } from './task-job.js';
import {
  ANNOTATION_GENERATION,
  ANNOTATION_PROCESS_GUID,
  LABEL_GUID,
  LABEL_MANAGED_BY,
  LABEL_SOURCE_TYPE,
  LABEL_VERSION,
  MANAGED_BY,
  SOURCE_TYPE_APP,
} from './labels.js';
import { REVISION_LABEL } from './rollout.js';
import { slimPod } from './slim.js';
import { type RouteSource, routeSourceOf } from './route-registrations.js';
import { replicaFailureOf } from './pods-refused.js';
import { type CompactNanos, compactNanos, lastChangeMs, unixSeconds } from './time.js';

function changedAtSeconds(pod: Pod): number | undefined {
  const ms = lastChangeMs(pod);
  return ms === undefined ? undefined : Math.floor(ms / 1000);
}

/** Every pod the service manages: app instances and the pods of task and staging Jobs. */
export const MANAGED_SELECTOR = `${LABEL_MANAGED_BY}=${MANAGED_BY}`;
/** Task and staging Jobs, in one list or watch. */
export const JOB_SELECTOR = `${MANAGED_SELECTOR},${LABEL_SOURCE_TYPE} in (${SOURCE_TYPE_TASK},${SOURCE_TYPE_STAGING})`;

/** `namespace/job` of a task or staging pod: which Job it ran for. */
export function jobPodKey(pod: Pod): string {
  const labels = pod.metadata.labels;
  return `${pod.metadata.namespace ?? ''}/${labels?.['batch.kubernetes.io/job-name'] ?? labels?.['job-name'] ?? ''}`;
}

/** routing: keep what routing reads (routes on workloads, addresses on Ready pods); off, nothing more is held. */
export interface SummaryOptions {
  routing?: boolean;
}

/** An LRP's workload (a Deployment or a StatefulSet) as the cache holds it, to compare with the LRP's record. */
export interface WorkloadSummary {
  kind: WorkloadKind;
  processGuid: string;
  name: string;
  namespace: string;
  /** The generation of the record it was last converged to (annotation), if any and a whole number. */
  generation: number | undefined;
  /** Its `metadata.generation`: moves with every spec change, ours or anyone's (see drift.ts). */
  specGeneration: number | undefined;
  /**
   * A StatefulSet's `status.updateRevision` once its controller has seen the current spec (observed
   * generation), else undefined: what its pods' revisions are compared with (drift.ts). A Deployment's
   * summary has no such key (at 100,000 Deployments every key held is 800 kB).
   */
  updateRevision?: string | undefined;
  /** A Deployment's pods refused (its ReplicaFailure condition): the API server's message; absent else. */
  podsRefused?: string;
  /** A StatefulSet's desired pods (spec.replicas), against which its refusal Events are judged. */
  replicas?: number;
  /** What gorouter is told of its instances, when routing is on and it has routes; absent else. */
  routes?: RouteSource;
  /** The resourceVersion it was made from, as the watch holds it (a number when it is one). */
  rv: number | string;
}

/** An app pod as one instance of its LRP; its index is assigned once all the LRP's pods are known. */
export interface AppPodSummary {
  kind: 'app';
  processGuid: string;
  name: string;
  /** Creation, Unix seconds. */
  createdS: number | undefined;
  state: InstanceState;
  /** The instance's start (see CompactNanos; 0 when unknown). */
  since: CompactNanos;
  placementError: string | undefined;
  /** When the pod last changed, by its own timestamps (whole Unix seconds, a small integer to V8). */
  changedAtS: number | undefined;
  /** A StatefulSet pod's ordinal, its index (see ordinalOf); undefined for a Deployment's pod. */
  ordinal: number | undefined;
  /**
   * A StatefulSet pod's `controller-revision-hash` label (the revision it runs) while it is not RUNNING:
   * only such a pod can hold a rollout up (drift.ts), and most pods run (a string each, 6 MB at 120,000).
   * Undefined for a running one; a Deployment's pod has no such key.
   */
  revision?: string | undefined;
  /** Routing on and the pod RUNNING (Ready): its address and uid, for gorouter; absent else. */
  ip?: string;
  uid?: string;
  /**
   * The pod itself (slim) only while it has crashes CC has not been told of: their reports carry the
   * instance index, known only once all its LRP's pods are. Rare, so kept whole.
   */
  unreported: Pod | undefined;
  rv: number | string;
}

/** A task or staging pod, kept slim for the Job pass (there are few). */
export interface JobPodSummary {
  kind: 'job';
  pod: Pod;
  rv: number | string;
}

export type ManagedPodSummary = AppPodSummary | JobPodSummary;

/** The process guid of an LRP object: its annotation, else its guid and version labels. */
export function processGuidOfObject(o: Deployment | StatefulSet | Pod): string | undefined {
  const a = o.metadata.annotations?.[ANNOTATION_PROCESS_GUID];
  if (a) return a;
  const g = o.metadata.labels?.[LABEL_GUID];
  const v = o.metadata.labels?.[LABEL_VERSION];
  return g && v ? processGuidOf(g, v) : undefined;
}

function generationOf(annotation: string | undefined): number | undefined {
  const n = annotation !== undefined && /^\d+$/.test(annotation) ? Number(annotation) : NaN;
  return Number.isSafeInteger(n) ? n : undefined;
}

/** Undefined for a workload that names no LRP (nothing to converge it to). */
export function summarizeWorkload(
  kind: WorkloadKind,
  d: Deployment | StatefulSet,
  rv: number | string,
  options: SummaryOptions = {},
): WorkloadSummary | undefined {
  const processGuid = processGuidOfObject(d);
  if (!processGuid) return undefined;
  const a = d.metadata.annotations;
  const generation = generationOf(a?.[ANNOTATION_GENERATION]);
  const { name, generation: specGeneration } = d.metadata;
  const namespace = d.metadata.namespace ?? '';
  // A kind's keys are written in its literal: a key added later gives each summary a property store of
  // its own (about 40 B, 9 MB over 100,000 StatefulSets and their pods).
  if (kind !== 'statefulset') {
    const summary: WorkloadSummary = { kind, processGuid, name, namespace, generation, specGeneration, rv };
    const refused = replicaFailureOf(d);
    if (refused !== undefined) summary.podsRefused = refused;
    return withRoutes(summary, d, options);
  }
  const status = (d as StatefulSet).status;
  const observed = (status?.observedGeneration ?? 0) >= (d.metadata.generation ?? 0);
  const updateRevision = observed ? status?.updateRevision || undefined : undefined;
  const replicas = (d as StatefulSet).spec?.replicas ?? 1;
  const summary: WorkloadSummary = {
    kind,
    processGuid,
    name,
    namespace,
    generation,
    specGeneration,
    updateRevision,
    replicas,
    rv,
  };
  return withRoutes(summary, d, options);
}

function withRoutes(
  summary: WorkloadSummary,
  d: Deployment | StatefulSet,
  options: SummaryOptions,
): WorkloadSummary {
  if (options.routing) {
    const routes = routeSourceOf(d);
    if (routes) summary.routes = routes;
  }
  return summary;
}

/**
 * App pods become instances; a terminating one is no longer an instance (its replacement is) and an app
 * pod naming no LRP is nothing, both undefined. Every other pod is a Job's.
 */
export function summarizeManagedPod(
  pod: Pod,
  rv: number | string,
  options: SummaryOptions = {},
): ManagedPodSummary | undefined {
  if (pod.metadata.labels?.[LABEL_SOURCE_TYPE] !== SOURCE_TYPE_APP)
    return { kind: 'job', pod: slimPod(pod), rv };
  const processGuid = processGuidOfObject(pod);
  if (!processGuid || pod.metadata.deletionTimestamp) return undefined;
  const info = podToInstance(pod, 0);
  const ordinal = ordinalOf(pod);
  const name = pod.metadata.name;
  const createdS = unixSeconds(pod.metadata.creationTimestamp);
  const { state, placementError } = info;
  const since = compactNanos(info.sinceNs);
  const changedAtS = changedAtSeconds(pod);
  const unreported = hasUnreportedCrashes(pod) ? slimPod(pod) : undefined;
  // Two literals, so a Deployment's pod has no `revision` key and each shape is written whole (see
  // summarizeWorkload: a key added after gives every summary a property store of its own).
  const summary: AppPodSummary =
    ordinal === undefined
      ? {
          kind: 'app',
          processGuid,
          name,
          createdS,
          state,
          since,
          placementError,
          changedAtS,
          ordinal,
          unreported,
          rv,
        }
      : {
          kind: 'app',
          processGuid,
          name,
          createdS,
          state,
          since,
          placementError,
          changedAtS,
          ordinal,
          unreported,
          revision: state === 'RUNNING' ? undefined : pod.metadata.labels?.[REVISION_LABEL],
          rv,
        };
  const ip = pod.status?.podIP;
  if (options.routing && info.state === 'RUNNING' && ip) {
    summary.ip = ip;
    summary.uid = pod.metadata.uid ?? '';
  }
  return summary;
}

/**
 * A StatefulSet pod's ordinal: its `apps.kubernetes.io/pod-index` label (Kubernetes ≥ 1.28), else the
 * number its name ends in (`<statefulset>-<ordinal>`, on every version). Undefined for other pods.
 */
export function ordinalOf(pod: Pod): number | undefined {
  if (!pod.metadata.ownerReferences?.some((r) => r.kind === 'StatefulSet' && r.controller === true))
    return undefined;
  const text = pod.metadata.labels?.[POD_INDEX_LABEL] ?? /-(\d+)$/.exec(pod.metadata.name)?.[1];
  const n = text !== undefined && /^\d{1,9}$/.test(text) ? Number(text) : NaN;
  return Number.isSafeInteger(n) ? n : undefined;
}
