/**
 * Crash reports for CC (`/internal/v4/apps/<process_guid>/crashed`): one per crash, not one per poll.
 *
 * What has been reported lives on the pod itself, in the annotation CRASHES_REPORTED_ANNOTATION: the
 * highest `crash_count` reported so far for that pod, NONE_REPORTED (-1, also when the annotation is
 * absent) before the first. Crash counts are restart numbers (1, 2, …, the container's restartCount), plus
 * 0 for a container that never started (e.g. its image cannot be pulled), which is reported once, before
 * any restart. The marker dies with the pod, as the restart count does, so nothing needs cleaning up.
 *
 * The caller reads the marker with reportedCrashesOf, sends each report, then raises the marker to that
 * report's crash_count. Raising it only after CC took the report means a crash is reported twice at worst
 * (a failed annotation write), never lost.
 */
import type { CrashReport } from '@opi/domain';
import { latestTermination } from './container-status.js';
import { describeCondition, describeExit } from './diego-words.js';
import { CRASH_WAITING_REASONS, appStatus } from './instances.js';
import { describeProbeKill, mayBeProbeKill } from './probe-kills.js';
import type { ContainerStatus, CoreEvent, Pod } from '@opi/kube-objects';
import { LABEL_PROCESS_TYPE } from './labels.js';
import { unixSeconds } from './time.js';

export const CRASHES_REPORTED_ANNOTATION = 'opi.cloudfoundry.org/crashes-reported';

/** The marker's value before anything was reported. */
export const NONE_REPORTED = -1;

/**
 * At most this many reports per call, the latest restarts. A pod found with many unreported restarts (the
 * marker lost, the service down for a while) would otherwise flood CC with events that all carry the same,
 * latest, termination; crash_count still says how many there were.
 */
export const MAX_CRASH_REPORTS = 10;

/** Waiting reasons of a container that has never run, as opposed to one backing off between crashes. */
const NEVER_STARTED: ReadonlySet<string> = new Set(
  [...CRASH_WAITING_REASONS].filter((reason) => reason !== 'CrashLoopBackOff'),
);

/** The pod's marker: the highest crash_count reported, NONE_REPORTED when absent or not a count. */
export function reportedCrashesOf(pod: Pod): number {
  const value = pod.metadata.annotations?.[CRASHES_REPORTED_ANNOTATION];
  return value !== undefined && /^(?:-1|0|[1-9]\d{0,8})$/.test(value) ? Number(value) : NONE_REPORTED;
}

/** When the pod started, for crashes that have no termination time of their own; 0 when unknown. */
function podStartSeconds(pod: Pod): number {
  return unixSeconds(pod.status?.startTime) ?? unixSeconds(pod.metadata.creationTimestamp) ?? 0;
}

type CrashDetails = Omit<CrashReport, 'crashCount'>;

/** What every report's `reason` is: Diego's tps-watcher sends the instance's state (tps watcher/watcher.go:124). */
export const CRASH_REASON = 'CRASHED';

/** The instance's log source as Diego names it, `APP/PROC/<TYPE>` (CC main_lrp_action_builder.rb:63). */
function processSource(pod: Pod): string | undefined {
  const type = pod.metadata.labels?.[LABEL_PROCESS_TYPE];
  return type ? `APP/PROC/${type.toUpperCase()}` : undefined;
}

/**
 * The latest termination's details: the current one, else the previous run's. Without one (the kubelet
 * lost it) the waiting reason, typically CrashLoopBackOff, is all there is to tell.
 */
function restartDetails(pod: Pod, status: ContainerStatus, processGuid: string, index: number): CrashDetails {
  const terminated = latestTermination(status);
  const waiting = status.state?.waiting;
  const waitingReason =
    waiting?.reason && CRASH_WAITING_REASONS.has(waiting.reason) ? waiting.reason : undefined;
  const source = processSource(pod);
  return {
    processGuid,
    instance: pod.metadata.name,
    index,
    reason: CRASH_REASON,
    exitStatus: terminated?.exitCode ?? 0,
    exitDescription: terminated
      ? describeExit(source, terminated)
      : describeCondition(source, waitingReason ?? 'crashed', waiting?.message),
    crashTimestamp:
      unixSeconds(terminated?.finishedAt) ??
      unixSeconds(status.state?.running?.startedAt) ??
      podStartSeconds(pod),
  };
}

/** The crash counts due after the marker (`first` to `last`; 0 to 0 for a container that never started). */
interface DueCrashes {
  status: ContainerStatus;
  first: number;
  last: number;
}

function dueCrashes(pod: Pod, alreadyReported: number): DueCrashes | undefined {
  const status = appStatus(pod);
  if (!status) return undefined;
  const restarts = status.restartCount;
  if (restarts > 0) {
    const first = Math.max(alreadyReported + 1, 1, restarts - MAX_CRASH_REPORTS + 1);
    return first > restarts ? undefined : { status, first, last: restarts };
  }
  const reason = status.state?.waiting?.reason;
  return alreadyReported < 0 && reason && NEVER_STARTED.has(reason)
    ? { status, first: 0, last: 0 }
    : undefined;
}

/** Whether crashReportsFor would report anything, without building the reports. */
export function hasUnreportedCrashes(pod: Pod, alreadyReported = reportedCrashesOf(pod)): boolean {
  return dueCrashes(pod, alreadyReported) !== undefined;
}

/**
 * The crashes of the pod's app container not yet reported (`alreadyReported` is the pod's marker, see
 * reportedCrashesOf), oldest first: one report per restart after the marker, crash_count being the restart
 * number, each with the latest termination's details (the kubelet keeps no older ones); or, for a
 * container that never started (ErrImagePull, ImagePullBackOff, InvalidImageName, and
 * CreateContainerConfigError, which is how a root image refused by runAsNonRoot shows), a single report
 * with crash_count 0 while nothing was reported.
 */
export function crashReportsFor(
  pod: Pod,
  processGuid: string,
  index: number,
  alreadyReported: number,
): CrashReport[] {
  const due = dueCrashes(pod, alreadyReported);
  if (!due) return [];
  const { status, first, last } = due;
  if (last === 0) {
    const waiting = status.state?.waiting;
    return [
      {
        processGuid,
        instance: pod.metadata.name,
        index,
        reason: CRASH_REASON,
        exitStatus: 0,
        exitDescription: describeCondition(
          processSource(pod),
          waiting?.reason ?? 'crashed',
          waiting?.message,
        ),
        crashCount: 0,
        crashTimestamp: podStartSeconds(pod),
      },
    ];
  }
  const details = restartDetails(pod, status, processGuid, index);
  return Array.from({ length: last - first + 1 }, (_, i) => ({ ...details, crashCount: first + i }));
}

/**
 * Whether the app container's latest end may be a probe kill (a signal, not OOM): only then are the pod's
 * Events read, so most crashes cost no extra request.
 */
export function mayBeProbeKilled(pod: Pod): boolean {
  const status = appStatus(pod);
  const terminated = status && latestTermination(status);
  return !!terminated && mayBeProbeKill(terminated);
}

/** The latest end of the app container in Diego's health check words, when its Events show a probe kill. */
export function probeKillDescription(pod: Pod, events: readonly CoreEvent[]): string | undefined {
  const status = appStatus(pod);
  const terminated = status && latestTermination(status);
  if (!status || !terminated) return undefined;
  return describeProbeKill(processSource(pod), pod, status.name, terminated, events);
}
