/** The pod shapes the controllers read and write, and small predicates over them shared by all controllers. */
import { CRASH_IMAGE_PREFIX, PULL_ERROR_IMAGE_PREFIX, SIM_ENV } from '../behaviour.js';
import { POD_FIELDS } from '../resources.js';
import type { KubeObject, OwnerReference } from '../types.js';
import { parseQuantity } from './quantity.js';

export interface EnvVar {
  name: string;
  value?: string;
  valueFrom?: { fieldRef?: { fieldPath?: string } } & Record<string, unknown>;
}

export interface Container {
  name: string;
  image: string;
  env?: EnvVar[];
  resources?: { requests?: Record<string, unknown>; limits?: Record<string, unknown> };
  terminationMessagePolicy?: string;
  imagePullPolicy?: string;
  /** `Always` on an init container makes it a sidecar. */
  restartPolicy?: string;
  startupProbe?: SimProbe;
  livenessProbe?: SimProbe;
  ports?: ContainerPort[];
}

export interface ContainerPort {
  containerPort: number;
  protocol?: string;
  name?: string;
}

/** The TCP ports a container declares (protocol defaults to TCP), each once, in order. */
export function tcpPorts(c: Container): number[] {
  const ports = new Set<number>();
  for (const p of Array.isArray(c.ports) ? c.ports : []) {
    if (typeof p !== 'object' || p === null) continue;
    const port = p.containerPort;
    if ((p.protocol ?? 'TCP') !== 'TCP' || !Number.isInteger(port) || port < 1 || port > 65535) continue;
    ports.add(port);
  }
  return [...ports];
}

/** What the kubelet's words for a failed probe need of it. */
export interface SimProbe {
  httpGet?: { path?: string; port: number | string };
  tcpSocket?: { port: number | string };
}

export interface PodSpec {
  nodeName?: string;
  nodeSelector?: Record<string, string>;
  schedulerName?: string;
  restartPolicy?: 'Always' | 'OnFailure' | 'Never';
  terminationGracePeriodSeconds?: number;
  containers: Container[];
  initContainers?: Container[];
  hostname?: string;
  subdomain?: string;
}

export interface PodCondition {
  type: string;
  status: 'True' | 'False' | 'Unknown';
  lastProbeTime?: string | null;
  lastTransitionTime?: string;
  reason?: string;
  message?: string;
}

export interface ContainerStateTerminated {
  exitCode: number;
  reason: string;
  message?: string;
  startedAt: string;
  finishedAt: string;
  containerID?: string;
}

export interface ContainerState {
  waiting?: { reason: string; message?: string };
  running?: { startedAt: string };
  terminated?: ContainerStateTerminated;
}

export interface ContainerStatus {
  name: string;
  image: string;
  imageID: string;
  containerID?: string;
  ready: boolean;
  started: boolean;
  restartCount: number;
  state: ContainerState;
  lastState: ContainerState;
}

export interface PodStatus {
  phase?: 'Pending' | 'Running' | 'Succeeded' | 'Failed' | 'Unknown';
  conditions?: PodCondition[];
  hostIP?: string;
  hostIPs?: { ip: string }[];
  podIP?: string;
  podIPs?: { ip: string }[];
  startTime?: string;
  containerStatuses?: ContainerStatus[];
  initContainerStatuses?: ContainerStatus[];
  qosClass?: string;
  [field: string]: unknown;
}

export function podSpec(pod: KubeObject): PodSpec {
  return (pod['spec'] ?? { containers: [] }) as PodSpec;
}

export function podStatus(pod: KubeObject): PodStatus {
  return (pod['status'] ?? {}) as PodStatus;
}

export { timestamp } from '../store-values.js';

export function key(namespace: string | undefined, name: string): string {
  return namespace ? `${namespace}/${name}` : name;
}

export function splitKey(k: string): { namespace: string; name: string } {
  const i = k.indexOf('/');
  return i < 0 ? { namespace: '', name: k } : { namespace: k.slice(0, i), name: k.slice(i + 1) };
}

export function controllerOf(o: KubeObject): OwnerReference | undefined {
  return o.metadata.ownerReferences?.find((r) => r.controller === true);
}

export function isTerminal(pod: KubeObject): boolean {
  const phase = podStatus(pod).phase;
  return phase === 'Succeeded' || phase === 'Failed';
}

/** controller.IsPodActive: not finished and not being deleted. */
export function isActive(pod: KubeObject): boolean {
  return !pod.metadata.deletionTimestamp && !isTerminal(pod);
}

export function condition(pod: KubeObject, type: string): PodCondition | undefined {
  return podStatus(pod).conditions?.find((c) => c.type === type);
}

export function isReady(pod: KubeObject): boolean {
  return condition(pod, 'Ready')?.status === 'True';
}

/** podutil.IsPodAvailable: ready for at least minReadySeconds. */
export function isAvailable(pod: KubeObject, minReadySeconds: number, now: number): boolean {
  const ready = condition(pod, 'Ready');
  if (ready?.status !== 'True') return false;
  if (minReadySeconds <= 0) return true;
  const since = ready.lastTransitionTime ? Date.parse(ready.lastTransitionTime) : now;
  return since + minReadySeconds * 1000 <= now;
}

/** How long until a ready pod becomes available (0 when it already is or never will be). */
export function msUntilAvailable(pod: KubeObject, minReadySeconds: number, now: number): number {
  const ready = condition(pod, 'Ready');
  if (ready?.status !== 'True' || minReadySeconds <= 0 || !ready.lastTransitionTime) return 0;
  return Math.max(0, Date.parse(ready.lastTransitionTime) + minReadySeconds * 1000 - now);
}

export function isRunningAndReady(pod: KubeObject): boolean {
  return podStatus(pod).phase === 'Running' && isReady(pod);
}

/** The cpu (cores) and memory (bytes) a pod asks for: requests, falling back to limits, as the scheduler sums them. */
export function podRequests(spec: PodSpec): { cpu: number; memory: number } {
  const of = (c: Container, r: string): number =>
    parseQuantity(c.resources?.requests?.[r]) ?? parseQuantity(c.resources?.limits?.[r]) ?? 0;
  let cpu = 0;
  let memory = 0;
  for (const c of spec.containers ?? []) {
    cpu += of(c, 'cpu');
    memory += of(c, 'memory');
  }
  // Init containers run one at a time, before the others: the pod needs the largest of them.
  for (const c of spec.initContainers ?? []) {
    cpu = Math.max(cpu, of(c, 'cpu'));
    memory = Math.max(memory, of(c, 'memory'));
  }
  return { cpu, memory };
}

export type SimBehaviour = 'crash' | 'oom' | 'fail' | 'never-ready' | 'never-healthy' | undefined;

/** What a container's environment and image ask of the simulated kubelet (SIM_ENV, the image prefixes). */
export interface SimConfig {
  behaviour: SimBehaviour;
  exitCode: number | undefined;
  runMs: number | undefined;
  /** KUBESIM_DRAIN_MS: this container's drain time instead of behaviour.drainMs. */
  drainMs: number | undefined;
  terminationMessage: string | undefined;
  log: string[];
  /** Lines printed on stderr at start (KUBESIM_LOG_ERR). */
  logErr: string[];
  /** Writes a numbered line on stdout this often while running (KUBESIM_LOG_EVERY_MS); 0: never. */
  logEveryMs: number;
  pullError: boolean;
  printEnv: boolean;
  /** A crash image (CRASH_IMAGE_PREFIX): the app dies while starting, never ready. */
  crashOnStart: boolean;
  /**
   * The app listens on its declared ports once running: all but a crash image (it dies while starting)
   * and `never-healthy` (its probes find nothing listening: `connection refused`).
   */
  listens: boolean;
}

export function simConfig(c: Container): SimConfig {
  const env = new Map<string, string>();
  for (const e of c.env ?? []) {
    // valueFrom (secrets, fields) is not resolved: only literal values count.
    if (e && typeof e.name === 'string' && typeof e.value === 'string') env.set(e.name, e.value);
  }
  const raw = env.get(SIM_ENV.behaviour)?.trim().toLowerCase();
  const image = typeof c.image === 'string' ? c.image : '';
  const lastSegment = image.slice(image.lastIndexOf('/') + 1);
  const crashOnStart = raw === undefined && lastSegment.startsWith(CRASH_IMAGE_PREFIX);
  const behaviour: SimBehaviour =
    raw === 'crash' || raw === 'oom' || raw === 'fail' || raw === 'never-ready' || raw === 'never-healthy'
      ? raw
      : crashOnStart
        ? 'crash'
        : undefined;
  const int = (v: string | undefined): number | undefined => {
    if (v === undefined || v.trim() === '') return undefined;
    const n = Number(v);
    return Number.isFinite(n) ? Math.trunc(n) : undefined;
  };
  const runMs = int(env.get(SIM_ENV.runMs));
  const drainMs = int(env.get(SIM_ENV.drainMs));
  const log = env.get(SIM_ENV.log);
  const lines = (v: string | undefined): string[] => (v === undefined || v === '' ? [] : v.split('\n'));
  return {
    behaviour,
    exitCode: int(env.get(SIM_ENV.exitCode)),
    runMs: runMs !== undefined && runMs >= 0 ? runMs : undefined,
    drainMs: drainMs !== undefined && drainMs >= 0 ? drainMs : undefined,
    terminationMessage: env.get(SIM_ENV.terminationMessage),
    log: lines(log),
    logErr: lines(env.get(SIM_ENV.logErr)),
    logEveryMs: Math.max(0, int(env.get(SIM_ENV.logEveryMs)) ?? 0),
    pullError: lastSegment.startsWith(PULL_ERROR_IMAGE_PREFIX),
    printEnv: env.get(SIM_ENV.printEnv)?.trim() === '1',
    crashOnStart,
    listens: !crashOnStart && behaviour !== 'never-healthy',
  };
}

/** The spec and status fields the downward API offers a container's environment. */
const DOWNWARD_FIELDS = new Set(['spec.nodeName', 'spec.serviceAccountName', 'status.podIP']);

/** A downward-API field path resolved from the pod, as the kubelet does when it starts a container. */
export function fieldOf(pod: KubeObject, fieldPath: string): string | undefined {
  const meta = pod.metadata as KubeObject['metadata'] & { annotations?: Record<string, string> };
  const keyed = /^metadata\.(labels|annotations)\['(.+)'\]$/.exec(fieldPath);
  if (keyed) return (keyed[1] === 'labels' ? meta.labels : meta.annotations)?.[keyed[2] ?? ''] ?? '';
  if (fieldPath === 'metadata.name') return meta.name;
  if (fieldPath === 'metadata.namespace') return meta.namespace;
  if (fieldPath === 'metadata.uid') return meta.uid;
  return DOWNWARD_FIELDS.has(fieldPath) ? POD_FIELDS[fieldPath]?.(pod) : undefined;
}

/** The container's environment as `NAME=value` lines (SIM_ENV.printEnv). */
export function resolvedEnv(pod: KubeObject, c: Container): string[] {
  return (c.env ?? []).map((e) => {
    if (typeof e.value === 'string' || !e.valueFrom) return `${e.name}=${e.value ?? ''}`;
    const path = e.valueFrom.fieldRef?.fieldPath;
    if (path !== undefined) return `${e.name}=${fieldOf(pod, path) ?? ''}`;
    return `${e.name}=<from ${Object.keys(e.valueFrom).join(', ')}>`;
  });
}

/** A controller-owned pod's ownerReference. */
export function ownerRef(owner: KubeObject): OwnerReference {
  return {
    apiVersion: owner.apiVersion,
    kind: owner.kind,
    name: owner.metadata.name,
    uid: owner.metadata.uid,
    controller: true,
    blockOwnerDeletion: true,
  };
}

/** Drops zero counters, as Go's `omitempty` does on the workload status structs. */
export function omitZero<T extends object>(o: T, fields: readonly (keyof T)[]): T {
  for (const f of fields) if (o[f] === 0) Reflect.deleteProperty(o, f);
  return o;
}
