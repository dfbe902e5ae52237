/**
 * The StatefulSet mode tells each instance its index from the pod's `apps.kubernetes.io/pod-index` label,
 * which the StatefulSet controller sets from Kubernetes 1.28. On an older cluster the variable would be
 * empty in every container, and apps that run migrations "on instance 0" would all skip them or all run
 * them: the worker refuses to start instead, unless the operator turned the index variables off.
 */
import type { WorkloadKind } from '@opi/domain';
import type { KubernetesPort, ServerVersion } from '@opi/kube';

/** The first Kubernetes release whose StatefulSet controller labels pods with their ordinal. */
export const POD_INDEX_LABEL_SINCE = { major: 1, minor: 28 };

/** A setting the cluster cannot honour: the process must not start (the message says what to do). */
export class StartRefusedError extends Error {}

/** `1.28`, `"28+"` (some providers) and a gitVersion `v1.28.3-gke.1` all read as 1.28; undefined if unreadable. */
export function versionOf(v: ServerVersion): { major: number; minor: number } | undefined {
  const major = Number.parseInt(v.major, 10);
  const minor = Number.parseInt(v.minor, 10);
  if (Number.isSafeInteger(major) && Number.isSafeInteger(minor)) return { major, minor };
  const m = /^v(\d+)\.(\d+)/.exec(v.gitVersion);
  return m ? { major: Number(m[1]), minor: Number(m[2]) } : undefined;
}

/** Why the index variables cannot be given on this cluster, or undefined when they can. */
export function indexEnvProblem(v: ServerVersion): string | undefined {
  const n = versionOf(v);
  const since = POD_INDEX_LABEL_SINCE;
  if (n && atLeast(n, since)) return undefined;
  const runs = n
    ? `runs Kubernetes ${n.major}.${n.minor}`
    : `reports a version we cannot read (${v.gitVersion})`;
  return (
    `OPI_WORKLOAD_KIND=statefulset tells each instance its index (CF_INSTANCE_INDEX) from the pod label ` +
    `apps.kubernetes.io/pod-index, which Kubernetes sets from ${since.major}.${since.minor}; this cluster ` +
    `${runs}. Upgrade the cluster, or set OPI_INSTANCE_INDEX_ENV=off to run StatefulSets without the ` +
    `index variables.`
  );
}

/** policy/v1 PodDisruptionBudgets exist from Kubernetes 1.21 (1.20 has only policy/v1beta1). */
export const PDB_V1_SINCE = { major: 1, minor: 21 };

function atLeast(n: { major: number; minor: number }, since: { major: number; minor: number }): boolean {
  return n.major > since.major || (n.major === since.major && n.minor >= since.minor);
}

/** What the worker uses of the cluster that depends on its version. */
export interface ClusterFeatures {
  /** Where the version came from: the server's gitVersion, or why it is assumed. */
  version: string;
  /** policy/v1 PodDisruptionBudgets; without them LRPs get none (and a warning at start). */
  pdbs: boolean;
}

/**
 * Reads /version once, at start. Throws StartRefusedError when the workload mode cannot be honoured; when
 * the version cannot be read and the mode does not need it, assumes a current cluster (and says so).
 */
export async function checkWorkloadMode(
  workloads: { kind: WorkloadKind; instanceIndexEnv: boolean },
  kube: Pick<KubernetesPort, 'getServerVersion'>,
): Promise<ClusterFeatures> {
  const needsIndex = workloads.kind === 'statefulset' && workloads.instanceIndexEnv;
  let version: ServerVersion;
  try {
    version = await kube.getServerVersion();
  } catch (e) {
    if (needsIndex) throw e;
    return { version: `unknown (${e instanceof Error ? e.message : String(e)})`, pdbs: true };
  }
  if (needsIndex) {
    const problem = indexEnvProblem(version);
    if (problem) throw new StartRefusedError(problem);
  }
  const n = versionOf(version);
  return { version: version.gitVersion, pdbs: n === undefined || atLeast(n, PDB_V1_SINCE) };
}
