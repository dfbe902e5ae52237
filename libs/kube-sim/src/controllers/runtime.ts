/**
 * The simulated container runtime's state for the pods of our nodes, and how the kubelet turns it into
 * `pod.status` (phase, conditions, container statuses), following kubelet's getPhase and its condition
 * generators, so the statuses read like a real node's.
 */
import { createHash } from 'node:crypto';
import type { KubeObject } from '../types.js';
import type {
  Container,
  ContainerState,
  ContainerStatus,
  PodCondition,
  PodStatus,
  SimConfig,
} from './pods.js';
import { podStatus, simConfig, timestamp } from './pods.js';
import type { ContainerLog } from './container-log.js';
import type { PortListener } from './pod-http.js';
import type { Timer } from './timers.js';

export interface ContainerRun {
  spec: Container;
  name: string;
  init: boolean;
  /** An init container with restartPolicy Always: starts in init order, then keeps running. */
  sidecar: boolean;
  sim: SimConfig;
  /** containerd's normalised reference, e.g. `docker.io/library/nginx:latest`. */
  image: string;
  imageID: string;
  containerID: string | undefined;
  restartCount: number;
  state: ContainerState;
  lastState: ContainerState;
  ready: boolean;
  started: boolean;
  /** Init containers: exited 0 (or, for sidecars, started). */
  done: boolean;
  crashBackoffMs: number;
  pullBackoffMs: number;
  /** The log of the current (or last) run; undefined until it first started. */
  logs: ContainerLog | undefined;
  previousLogs: ContainerLog | undefined;
  /** The HTTP listeners of this run of the container, by port (pods answer HTTP). */
  listeners: Map<number, PortListener>;
  /** Ports this run of the container could not bind: not tried again until it restarts. */
  bindFailed: Set<number>;
}

export interface PodRun {
  uid: string;
  namespace: string;
  name: string;
  node: string;
  restartPolicy: 'Always' | 'OnFailure' | 'Never';
  init: ContainerRun[];
  containers: ContainerRun[];
  /** Index of the next init container to start. */
  nextInit: number;
  initialized: boolean;
  /** An init container failed with restartPolicy Never: the pod has failed. */
  initFailed: boolean;
  ip: string | undefined;
  hostIP: string;
  startTime: string;
  timers: Set<Timer>;
  terminating: boolean;
  /** Being deleted, and its drain time is over: its ports no longer answer. */
  drained: boolean;
  /** condition type → status and the time it last changed */
  transitions: Map<string, { status: string; time: string }>;
}

export function newContainerRun(spec: Container, init: boolean, backoffMs: number): ContainerRun {
  const image = normalizeImage(spec.image);
  return {
    spec,
    name: spec.name,
    init,
    sidecar: init && spec.restartPolicy === 'Always',
    sim: simConfig(spec),
    image,
    imageID: '',
    containerID: undefined,
    restartCount: 0,
    state: { waiting: { reason: init ? 'PodInitializing' : 'ContainerCreating' } },
    lastState: {},
    ready: false,
    started: false,
    done: false,
    crashBackoffMs: backoffMs,
    pullBackoffMs: backoffMs,
    logs: undefined,
    previousLogs: undefined,
    listeners: new Map(),
    bindFailed: new Set(),
  };
}

/** Docker-style reference normalisation, as containerd reports images: registry, `library/`, `:latest`. */
export function normalizeImage(image: string): string {
  const at = image.indexOf('@');
  const name = at >= 0 ? image.slice(0, at) : image;
  const digest = at >= 0 ? image.slice(at) : '';
  const slash = name.indexOf('/');
  const first = slash >= 0 ? name.slice(0, slash) : '';
  const hasRegistry = slash >= 0 && (first.includes('.') || first.includes(':') || first === 'localhost');
  let repo = hasRegistry ? name : `docker.io/${slash >= 0 ? name : `library/${name}`}`;
  const lastSegment = repo.slice(repo.lastIndexOf('/') + 1);
  if (!digest && !lastSegment.includes(':')) repo += ':latest';
  return repo + digest;
}

/** `repo@sha256:…`: the image's own digest, or one derived from its name (stable per image). */
export function imageIdOf(normalized: string): string {
  const at = normalized.indexOf('@');
  if (at >= 0) return normalized;
  const colon = normalized.lastIndexOf(':');
  const repo = colon > normalized.lastIndexOf('/') ? normalized.slice(0, colon) : normalized;
  return `${repo}@sha256:${createHash('sha256').update(normalized).digest('hex')}`;
}

/** Go's time.Duration.String() for whole milliseconds: `100ms`, `1.6s`, `20s`, `1m20s`, `5m0s`. */
export function goDuration(ms: number): string {
  const total = Math.max(0, Math.round(ms));
  if (total === 0) return '0s';
  if (total < 1000) return `${total}ms`;
  const h = Math.floor(total / 3_600_000);
  const m = Math.floor((total % 3_600_000) / 60_000);
  const s = (total % 60_000) / 1000;
  const sec = `${Number(s.toFixed(3))}s`;
  if (h > 0) return `${h}h${m}m${sec}`;
  if (m > 0) return `${m}m${sec}`;
  return sec;
}

/** kubelet getPhase. */
export function podPhase(run: PodRun): NonNullable<PodStatus['phase']> {
  if (run.initFailed) return 'Failed';
  if (!run.initialized) return 'Pending';
  let waiting = 0;
  let running = 0;
  let stopped = 0;
  let succeeded = 0;
  for (const c of run.containers) {
    if (c.state.running) running++;
    else if (c.state.terminated) {
      stopped++;
      if (c.state.terminated.exitCode === 0) succeeded++;
    } else if (c.lastState.terminated) {
      // Waiting to restart after having run: it counts as stopped, not as never started.
      stopped++;
      if (c.lastState.terminated.exitCode === 0) succeeded++;
    } else waiting++;
  }
  if (waiting > 0) return 'Pending';
  if (running > 0) return 'Running';
  if (stopped > 0) {
    if (run.restartPolicy === 'Always') return 'Running';
    if (run.restartPolicy === 'OnFailure') return stopped === succeeded ? 'Succeeded' : 'Running';
    return stopped === succeeded ? 'Succeeded' : 'Failed';
  }
  return 'Pending';
}

/** Keys in the order the apiserver serialises them; containerID only once the container was created. */
function containerStatus(c: ContainerRun): ContainerStatus {
  const s = {} as ContainerStatus;
  if (c.containerID) s.containerID = c.containerID;
  s.image = c.image;
  s.imageID = c.imageID;
  s.lastState = structuredClone(c.lastState);
  s.name = c.name;
  s.ready = c.ready;
  s.restartCount = c.restartCount;
  s.started = c.started;
  s.state = structuredClone(c.state);
  return s;
}

const MANAGED_CONDITIONS = ['PodReadyToStartContainers', 'Initialized', 'Ready', 'ContainersReady'];

/** The status the kubelet reports for the pod, keeping what others own (PodScheduled, qosClass, …). */
export function buildStatus(run: PodRun, pod: KubeObject, now: number): PodStatus {
  const previous = podStatus(pod);
  const phase = podPhase(run);
  const terminal = phase === 'Succeeded' || phase === 'Failed';
  const time = timestamp(now);
  const cond = (type: string, ok: boolean, reason?: string, message?: string): PodCondition => {
    const status = ok ? 'True' : 'False';
    const seen = run.transitions.get(type);
    if (!seen || seen.status !== status) run.transitions.set(type, { status, time });
    const c: PodCondition = {
      type,
      status,
      lastProbeTime: null,
      lastTransitionTime: run.transitions.get(type)?.time ?? time,
    };
    if (reason) c.reason = reason;
    if (message) c.message = message;
    return c;
  };

  const incomplete = run.init.filter((c) => !c.done).map((c) => c.name);
  const unready = [...run.init.filter((c) => c.sidecar), ...run.containers]
    .filter((c) => !c.ready)
    .map((c) => c.name);
  const allReady = unready.length === 0 && run.initialized;
  const notReadyReason =
    phase === 'Succeeded' ? 'PodCompleted' : phase === 'Failed' ? 'PodFailed' : 'ContainersNotReady';
  const notReadyMessage = terminal ? undefined : `containers with unready status: [${unready.join(' ')}]`;
  const conditions: PodCondition[] = [
    cond('PodReadyToStartContainers', !terminal),
    run.initialized
      ? cond('Initialized', true)
      : cond(
          'Initialized',
          false,
          'ContainersNotInitialized',
          `containers with incomplete status: [${incomplete.join(' ')}]`,
        ),
    allReady && !terminal ? cond('Ready', true) : cond('Ready', false, notReadyReason, notReadyMessage),
    allReady && !terminal
      ? cond('ContainersReady', true)
      : cond('ContainersReady', false, notReadyReason, notReadyMessage),
    ...(previous.conditions ?? []).filter((c) => !MANAGED_CONDITIONS.includes(c.type)),
  ];

  const status: PodStatus = { ...previous, conditions, hostIP: run.hostIP, hostIPs: [{ ip: run.hostIP }] };
  if (run.init.length > 0) status.initContainerStatuses = run.init.map(containerStatus);
  status.containerStatuses = run.containers.map(containerStatus);
  status.phase = phase;
  if (run.ip) {
    status.podIP = run.ip;
    status.podIPs = [{ ip: run.ip }];
  }
  status.startTime = run.startTime;
  return status;
}
