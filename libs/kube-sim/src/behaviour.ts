/**
 * How the simulated kubelet and controllers pace themselves, and the simulated nodes. Every delay gets a
 * uniform jitter of up to `jitterMs` from the simulator's seeded RNG.
 */
export interface NodeShape {
  /** Node names are `kubesim-node-<i>`. */
  count: number;
  /** Allocatable capacity per node, as Kubernetes quantities. */
  cpu: string;
  memory: string;
  ephemeralStorage: string;
  pods: number;
}

export interface BehaviourConfig {
  /** Pod created → bound to a node (PodScheduled, event Scheduled). */
  scheduleDelayMs: number;
  /** Bound → image pulled (Pulling/Pulled events). */
  pullDelayMs: number;
  /** Pulled → container running (Created/Started events). */
  startDelayMs: number;
  /** Running → Ready (readiness passes). */
  readyDelayMs: number;
  /** How long a container of a Job pod (restartPolicy Never/OnFailure) runs before it exits 0. */
  jobRunMs: number;
  /** How long a container that is told to crash runs before it exits. */
  crashAfterMs: number;
  /** CrashLoopBackOff: first back-off, doubled per restart up to backoffMaxMs (kubelet: 10 s → 5 min). */
  backoffBaseMs: number;
  backoffMaxMs: number;
  /** Graceful pod deletion: time the containers take to stop, at most the grace period. */
  terminationDelayMs: number;
  /**
   * Graceful pod deletion of a container that serves its ports (pods answer HTTP, docs/simulator.md):
   * how long it keeps answering after SIGTERM, as an app draining its connections, before it closes
   * them and exits; at most the pod's grace period. The pod is removed once its containers stopped.
   */
  drainMs: number;
  /** Uniform jitter added to each delay. */
  jitterMs: number;
  nodes: NodeShape;
  /**
   * kube-controller-manager's MaxUnavailableStatefulSet gate (off before 1.35, on from 1.35): rolling
   * updates honour `rollingUpdate.maxUnavailable`, and, as upstream does (kubernetes#137409), never
   * replace old-revision pods while as many pods as maxUnavailable are unavailable, so a rollout over
   * crash-looping pods sticks. Off: one pod at a time from the highest ordinal, as 1.30 does.
   */
  maxUnavailableStatefulSet: boolean;
  /**
   * Containers' logs also written as the kubelet's CRI log files under `dir` (docs/simulator.md), rotated
   * at `maxBytes` keeping `maxFiles` (the live one included), a pod's directory removed `retainMs` after
   * the pod is gone. Off when undefined (`npm start` and the bench keep logs in memory only).
   */
  podLogFiles?: PodLogFiles;
}

export interface PodLogFiles {
  dir: string;
  maxBytes: number;
  maxFiles: number;
  retainMs: number;
}

/** Quick but visible: what `npm start` and `npm run sim` use. */
export const DEFAULT_BEHAVIOUR: BehaviourConfig = {
  scheduleDelayMs: 100,
  pullDelayMs: 300,
  startDelayMs: 200,
  readyDelayMs: 400,
  jobRunMs: 2000,
  crashAfterMs: 1000,
  backoffBaseMs: 2000,
  backoffMaxMs: 30_000,
  terminationDelayMs: 300,
  drainMs: 1000,
  jitterMs: 200,
  nodes: { count: 3, cpu: '8', memory: '32Gi', ephemeralStorage: '100Gi', pods: 110 },
  maxUnavailableStatefulSet: false,
};

/** For tests: every step in tens of milliseconds. */
export const FAST_BEHAVIOUR: BehaviourConfig = {
  ...DEFAULT_BEHAVIOUR,
  scheduleDelayMs: 5,
  pullDelayMs: 10,
  startDelayMs: 10,
  readyDelayMs: 10,
  jobRunMs: 100,
  crashAfterMs: 50,
  backoffBaseMs: 100,
  backoffMaxMs: 800,
  terminationDelayMs: 10,
  drainMs: 50,
  jitterMs: 5,
};

/**
 * Conventions a workload can use to ask the simulated kubelet for a failure, through its container's
 * environment (the OPI server passes app environment through) or image name.
 */
export const SIM_ENV = {
  /** `crash` (exit after crashAfterMs, restart with CrashLoopBackOff), `oom` (like crash, OOMKilled, 137),
   *  `fail` (exit with KUBESIM_EXIT_CODE, default 1, once — for Job pods), `never-ready` (runs, never ready),
   *  `never-healthy` (never ready; after crashAfterMs its startup, else liveness, probe kills it: 137). */
  behaviour: 'KUBESIM_BEHAVIOUR',
  exitCode: 'KUBESIM_EXIT_CODE',
  /** Overrides jobRunMs / crashAfterMs for this container. */
  runMs: 'KUBESIM_RUN_MS',
  /** Overrides drainMs for this container: how long its ports keep answering once the pod is deleted. */
  drainMs: 'KUBESIM_DRAIN_MS',
  /** Written to the container's terminated state `message` when it exits (terminationMessagePath). */
  terminationMessage: 'KUBESIM_TERMINATION_MESSAGE',
  /** Lines the container "prints" on stdout when it starts (\n separated). */
  log: 'KUBESIM_LOG',
  /** Lines it prints on stderr when it starts, after those of KUBESIM_LOG. */
  logErr: 'KUBESIM_LOG_ERR',
  /** While running, a line `kubesim: <pod> <container> line <n>` on stdout every so many ms (n from 1). */
  logEveryMs: 'KUBESIM_LOG_EVERY_MS',
  /**
   * `1`: the container's log starts with its environment as the kubelet resolved it, one `NAME=value`
   * line per variable in order. Downward-API fields are resolved from the pod when the container starts
   * (`metadata.name|namespace|uid`, `metadata.labels['…']`, `metadata.annotations['…']`,
   * `spec.nodeName|serviceAccountName`, `status.podIP`; a missing label reads ""); other sources
   * (Secrets, ConfigMaps, resources) and `$(VAR)` references are not, and print as `NAME=<from …>`.
   */
  printEnv: 'KUBESIM_PRINT_ENV',
} as const;

/** Images whose last path segment starts with this cannot be pulled: ErrImagePull, then ImagePullBackOff. */
export const PULL_ERROR_IMAGE_PREFIX = 'kubesim-pull-error';
/**
 * Images whose last path segment starts with this crash while starting, before they are ready, and loop
 * (CrashLoopBackOff) as `KUBESIM_BEHAVIOUR=crash` does; a KUBESIM_BEHAVIOUR of the container wins.
 */
export const CRASH_IMAGE_PREFIX = 'kubesim-crash';
