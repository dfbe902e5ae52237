/** Reading a pod's container statuses: which container, and how it last ended. */
import type { ContainerStateTerminated, ContainerStatus, Pod } from '@opi/kube-objects';

/** The status of the container named `name`, else the first (a pod written by hand may name it otherwise). */
export function containerStatusOf(pod: Pod, name: string): ContainerStatus | undefined {
  const statuses = pod.status?.containerStatuses ?? [];
  return statuses.find((c) => c.name === name) ?? statuses[0];
}

/**
 * The container's latest termination: the current one, else the previous run's (a restarted container
 * runs or waits in CrashLoopBackOff, and its exit is in lastState).
 */
export function latestTermination(status: ContainerStatus): ContainerStateTerminated | undefined {
  return status.state?.terminated ?? status.lastState?.terminated;
}
