/** The Job (batch/v1) shape tasks and staging share: one pod, run once, never retried. */
import type { Container, Job, JobSpec } from './k8s-objects.js';
import { dnsLabelPart, shortHash } from './names.js';

/** The URL CC wants the outcome posted to, kept on the Job so a Job found in the cluster can be reported. */
export const ANNOTATION_COMPLETION_CALLBACK = 'cloudfoundry.org/completion_callback';

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
