/** Pods as CC's instances: Diego's states, start times, indexes and crash details. */
import type { InstanceInfo, InstanceState } from '@opi/domain';
import { containerStatusOf } from './container-status.js';
import { APP_CONTAINER } from './deployment.js';
import type { ContainerStatus, Pod } from '@opi/kube-objects';
import { unixNanos } from './time.js';

/** Waiting reasons after which the container will not run without a change or a back-off. */
export const CRASH_WAITING_REASONS: ReadonlySet<string> = new Set([
  'CrashLoopBackOff',
  'ErrImagePull',
  'ImagePullBackOff',
  'InvalidImageName',
  'CreateContainerError',
  'CreateContainerConfigError',
  'RunContainerError',
]);

function isCrashed(status: ContainerStatus): boolean {
  const { waiting, terminated } = status.state ?? {};
  return (
    (waiting?.reason !== undefined && CRASH_WAITING_REASONS.has(waiting.reason)) ||
    (terminated !== undefined && terminated.exitCode !== 0)
  );
}

/** Init containers first: one that fails keeps the app from ever starting. */
function allStatuses(pod: Pod): ContainerStatus[] {
  return [...(pod.status?.initContainerStatuses ?? []), ...(pod.status?.containerStatuses ?? [])];
}

function isScheduled(pod: Pod): boolean {
  return (
    Boolean(pod.spec?.nodeName) ||
    (pod.status?.conditions ?? []).some((c) => c.type === 'PodScheduled' && c.status === 'True')
  );
}

/** Every container running and ready (what Diego calls RUNNING, and a rollout counts as available). */
export function isRunningAndReady(pod: Pod): boolean {
  const statuses = pod.status?.containerStatuses ?? [];
  const expected = pod.spec?.containers.length ?? 1;
  return (
    pod.status?.phase === 'Running' &&
    statuses.length >= expected &&
    statuses.every((c) => c.ready && c.state?.running !== undefined)
  );
}

/**
 * The scheduler's reason in Diego's words where CC users know them: `0/3 nodes are available: 3
 * Insufficient memory.` becomes `Insufficient resources: memory` (cpu likewise, both as `cpu, memory`);
 * any other message is kept as it is.
 */
export function placementErrorOf(message: string): string {
  const found = new Set<string>();
  for (const m of message.matchAll(/\bInsufficient (cpu|memory)\b/g)) if (m[1]) found.add(m[1]);
  return found.size === 0 ? message : `Insufficient resources: ${[...found].sort().join(', ')}`;
}

function unschedulableMessage(pod: Pod): string | undefined {
  const condition = (pod.status?.conditions ?? []).find(
    (c) => c.type === 'PodScheduled' && c.status === 'False' && c.reason === 'Unschedulable',
  );
  return condition?.message || undefined;
}

/** The contract's state mapping, most telling first: a crash shows even while the pod is Running. */
export function instanceStateOf(pod: Pod): InstanceState {
  const phase = pod.status?.phase;
  if (phase === 'Failed' || allStatuses(pod).some(isCrashed)) return 'CRASHED';
  if (phase === 'Unknown') return 'UNKNOWN';
  const pendingOrNew = phase === undefined || phase === 'Pending';
  if (!isScheduled(pod)) return pendingOrNew ? 'UNCLAIMED' : 'UNKNOWN';
  if (isRunningAndReady(pod)) return 'RUNNING';
  return pendingOrNew || phase === 'Running' ? 'CLAIMED' : 'UNKNOWN';
}

/** The app container's status (the one named `opi`, else the first). */
export function appStatus(pod: Pod): ContainerStatus | undefined {
  return containerStatusOf(pod, APP_CONTAINER);
}

/** The instance's start: its container's current run, else the pod's start, in Unix nanoseconds; 0 if unknown. */
export function sinceNsOf(pod: Pod): bigint {
  return unixNanos(appStatus(pod)?.state?.running?.startedAt) ?? unixNanos(pod.status?.startTime) ?? 0n;
}

export function podToInstance(pod: Pod, index: number): InstanceInfo {
  const state = instanceStateOf(pod);
  const message = state === 'UNCLAIMED' ? unschedulableMessage(pod) : undefined;
  return {
    index,
    sinceNs: sinceNsOf(pod),
    state,
    ...(message ? { placementError: placementErrorOf(message) } : {}),
    podName: pod.metadata.name,
  };
}
