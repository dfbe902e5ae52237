/**
 * What tasks and staging share: the Job (batch/v1) shape (one pod, run once, never retried), and the
 * labels, annotations and selectors that tell one kind of run from the other.
 */
import type { DesiredTask } from '@opi/domain';
import type { Container, Job, JobSpec } from '@opi/kube-objects';
import {
  ANNOTATION_APP_NAME,
  ANNOTATION_ORG_NAME,
  ANNOTATION_SPACE_NAME,
  LABEL_APP_GUID,
  LABEL_MANAGED_BY,
  LABEL_ORG_GUID,
  LABEL_SOURCE_TYPE,
  LABEL_SPACE_GUID,
  MANAGED_BY,
  validLabels,
} from './labels.js';
import { dnsLabelPart, shortHash } from './names.js';

/** The URL CC wants the outcome posted to, kept on the Job so a Job found in the cluster can be reported. */
export const ANNOTATION_COMPLETION_CALLBACK = 'cloudfoundry.org/completion_callback';

/**
 * Set on a task or staging Job once CC has its outcome (an ISO time): the Job is neither reported again
 * nor kept past the finished-Job TTL counted from it.
 */
export const ANNOTATION_REPORTED_AT = 'opi.cloudfoundry.org/reported-at';

/** When CC took the Job's outcome (its ANNOTATION_REPORTED_AT), undefined while it has not. */
export function reportedAt(job: Pick<Job, 'metadata'> | undefined): string | undefined {
  return job?.metadata.annotations?.[ANNOTATION_REPORTED_AT] || undefined;
}

/** Room for a readable bit of the guid; the hash keeps the name unique. */
const GUID_CHARS = 8;

/**
 * `<kind>-<first 8 of the guid, DNS-1123-safe>-<10 hex of sha256(guid)>`: deterministic, so a retried create
 * hits "already exists" instead of running the work twice. Short, so the pods' `job-name` labels and
 * suffixed names (`-registry`) stay well within 63 characters.
 */
export function jobName(kind: string, guid: string): string {
  const readable = dnsLabelPart(guid, GUID_CHARS);
  return readable ? `${kind}-${readable}-${shortHash(guid)}` : `${kind}-${shortHash(guid)}`;
}

/** What tells one kind of run (tasks, staging) apart: its source-type label and the keys its guid is under. */
export interface RunOnceKeys {
  sourceType: string;
  guidLabel: string;
  guidAnnotation: string;
}

/** Whose run it is and where its outcome goes: fields a task and a staging request both carry. */
export type RunOnceRequest = Pick<
  DesiredTask,
  'appGuid' | 'appName' | 'spaceGuid' | 'spaceName' | 'orgGuid' | 'orgName' | 'completionCallback'
>;

/** One kind's selectors, labels and annotations (see runOnceKind). */
export interface RunOnceKind {
  /** Every Job (and pod) of this kind made by this service, for list and watch. */
  readonly selector: string;
  /** One run's Job and pods as a list selector (CC's guids are UUIDs, valid label values). */
  selectorOf(guid: string): string;
  /** A run's labels; values Kubernetes would refuse are left out, as for apps (see labelsFor). */
  labels(guid: string, req: RunOnceRequest): Record<string, string>;
  /**
   * A run's annotations: what a label cannot hold (`extra`: the kind's own), and the callback, so that a
   * run found in the cluster (after a restart of the service) can still be reported to CC.
   */
  annotations(guid: string, req: RunOnceRequest, extra?: Record<string, string>): Record<string, string>;
}

/** The selectors, labels and annotations of one kind of run, built the same way for tasks and staging. */
export function runOnceKind(keys: RunOnceKeys): RunOnceKind {
  const selector = `${LABEL_MANAGED_BY}=${MANAGED_BY},${LABEL_SOURCE_TYPE}=${keys.sourceType}`;
  return {
    selector,
    selectorOf: (guid) => `${selector},${keys.guidLabel}=${guid}`,
    labels: (guid, req) =>
      validLabels([
        [LABEL_SOURCE_TYPE, keys.sourceType],
        [keys.guidLabel, guid],
        [LABEL_APP_GUID, req.appGuid],
        [LABEL_SPACE_GUID, req.spaceGuid],
        [LABEL_ORG_GUID, req.orgGuid],
        [LABEL_MANAGED_BY, MANAGED_BY],
      ]),
    annotations: (guid, req, extra = {}) => ({
      [keys.guidAnnotation]: guid,
      ...extra,
      [ANNOTATION_COMPLETION_CALLBACK]: req.completionCallback,
      [ANNOTATION_APP_NAME]: req.appName,
      [ANNOTATION_SPACE_NAME]: req.spaceName,
      [ANNOTATION_ORG_NAME]: req.orgName,
    }),
  };
}

export interface RunOnceJobParts {
  name: string;
  namespace: string;
  labels: Record<string, string>;
  annotations: Record<string, string>;
  container: Container;
  /** The image pull Secret's name, when the image is private. */
  imagePullSecret?: string;
}

/**
 * A Job that runs `container` exactly once. CF runs a task or a staging once and reports how it ended; a
 * retry would run the user's command twice (tasks are often migrations) and hide the first failure, so
 * no restart in place (`Never`) and no replacement pod (`backoffLimit: 0`). The pods carry the Job's
 * labels so the service's selectors find them too.
 */
export function runOnceJob(parts: RunOnceJobParts): Job & { spec: JobSpec } {
  return {
    apiVersion: 'batch/v1',
    kind: 'Job',
    metadata: {
      name: parts.name,
      namespace: parts.namespace,
      labels: parts.labels,
      annotations: parts.annotations,
    },
    spec: {
      parallelism: 1,
      completions: 1,
      backoffLimit: 0,
      template: {
        metadata: { labels: { ...parts.labels } },
        spec: {
          containers: [parts.container],
          restartPolicy: 'Never',
          // No API credentials and no service env vars (hundreds of them in a busy namespace), as for apps.
          automountServiceAccountToken: false,
          enableServiceLinks: false,
          ...(parts.imagePullSecret ? { imagePullSecrets: [{ name: parts.imagePullSecret }] } : {}),
        },
      },
    },
  };
}
