/** Container settings every workload of the service shares: apps, tasks and staging. */
import type { ResourceRequirements, SecurityContext } from '@opi/kube-objects';

export interface ResourceSizes {
  memoryMb: number;
  diskMb: number;
  cpuWeight: number;
}

/** Memory and disk are CC's decimal megabytes; CPU weight 1–100 becomes that many millicores. */
export function containerResources(sizes: ResourceSizes): ResourceRequirements {
  const memory = `${sizes.memoryMb}M`;
  const disk = `${sizes.diskMb}M`;
  return {
    requests: { memory, cpu: `${sizes.cpuWeight}m`, 'ephemeral-storage': disk },
    // No CPU limit: CF shares CPU by weight, and a limit would throttle workloads on idle nodes.
    limits: { memory, 'ephemeral-storage': disk },
  };
}

/** No privilege escalation; `runAsNonRoot` makes the kubelet refuse images that run as root. */
export function containerSecurityContext(runAsNonRoot: boolean): SecurityContext {
  return { allowPrivilegeEscalation: false, runAsNonRoot };
}
