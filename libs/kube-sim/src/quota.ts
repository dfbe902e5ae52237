/**
 * ResourceQuota admission of pod creates, as the apiserver's ResourceQuota plugin does it
 * (plugin/pkg/admission/resourcequota/controller.go CheckRequest, pkg/quota/v1/evaluator/core/pods.go):
 * a quota that constrains cpu or memory refuses a pod whose containers do not set it ("failed quota"),
 * and one the pod would push past its hard limit refuses it ("exceeded quota"). Usage is computed from
 * the stored pods at admission, which is what the quota controller's status.used converges to; the same
 * numbers fill `status.used` (controllers/quota.ts).
 */
import { StatusError } from './errors.js';
import { parseQuantity } from './controllers/quantity.js';
import type { KubeObject } from './types.js';

/** The resources a quota names that the pod evaluator counts (pods.go podResources). */
const POD_RESOURCES = [
  'pods',
  'count/pods',
  'cpu',
  'memory',
  'requests.cpu',
  'requests.memory',
  'limits.cpu',
  'limits.memory',
] as const;

/** pods.go validationSet: quota on these makes each container state them (a "mistake" kept for compatibility). */
const VALIDATION_SET = new Set([
  'cpu',
  'memory',
  'requests.cpu',
  'requests.memory',
  'limits.cpu',
  'limits.memory',
]);

interface ContainerLike {
  name?: string;
  resources?: { requests?: Record<string, unknown>; limits?: Record<string, unknown> };
}

interface PodSpecLike {
  containers?: ContainerLike[];
  initContainers?: ContainerLike[];
}

/** A usage amount and whether it was written with a binary suffix (Ki, Mi, …), for printing it back. */
export interface Amount {
  value: number;
  binary: boolean;
}

export type Usage = Map<string, Amount>;

function amountOf(v: unknown): Amount | undefined {
  const value = parseQuantity(v);
  if (value === undefined) return undefined;
  return { value, binary: typeof v === 'string' && /[KMGTPE]i$/.test(v.trim()) };
}

function add(a: Amount | undefined, b: Amount): Amount {
  return a ? { value: a.value + b.value, binary: a.binary || b.binary } : { ...b };
}

function max(a: Amount | undefined, b: Amount): Amount {
  return !a || b.value > a.value ? { ...b } : a;
}

/**
 * A container's requests as the apiserver stores them: a resource with a limit and no request gets the
 * limit as its request (pkg/apis/core/v1/defaults.go SetDefaults_Pod).
 */
function requestsOf(c: ContainerLike): Record<string, unknown> {
  return { ...(c.resources?.limits ?? {}), ...(c.resources?.requests ?? {}) };
}

/** The pod's usage (pods.go PodUsageFunc): one pod, summed requests and limits, init containers as a max. */
export function podUsage(spec: PodSpecLike): Usage {
  const totals: Record<'requests' | 'limits', Record<'cpu' | 'memory', Amount | undefined>> = {
    requests: { cpu: undefined, memory: undefined },
    limits: { cpu: undefined, memory: undefined },
  };
  const collect = (containers: ContainerLike[] | undefined, combine: typeof add) => {
    const out: Record<'requests' | 'limits', Record<'cpu' | 'memory', Amount | undefined>> = {
      requests: { cpu: undefined, memory: undefined },
      limits: { cpu: undefined, memory: undefined },
    };
    for (const c of containers ?? []) {
      for (const [kind, values] of [
        ['requests', requestsOf(c)],
        ['limits', c.resources?.limits ?? {}],
      ] as const) {
        for (const r of ['cpu', 'memory'] as const) {
          const a = amountOf(values[r]);
          if (a) out[kind][r] = combine(out[kind][r], a);
        }
      }
    }
    return out;
  };
  const regular = collect(spec.containers, add);
  const init = collect(spec.initContainers, max);
  for (const kind of ['requests', 'limits'] as const) {
    for (const r of ['cpu', 'memory'] as const) {
      const a = regular[kind][r];
      const b = init[kind][r];
      totals[kind][r] = a && b ? max(a, b) : (a ?? b);
    }
  }
  const usage: Usage = new Map([
    ['pods', { value: 1, binary: false }],
    ['count/pods', { value: 1, binary: false }],
  ]);
  const req = totals.requests;
  const lim = totals.limits;
  if (req.cpu) usage.set('cpu', req.cpu).set('requests.cpu', req.cpu);
  if (req.memory) usage.set('memory', req.memory).set('requests.memory', req.memory);
  if (lim.cpu) usage.set('limits.cpu', lim.cpu);
  if (lim.memory) usage.set('limits.memory', lim.memory);
  return usage;
}

/** quota.v1 QuotaV1Pod: a finished pod, or one past its deletion time, no longer counts. */
export function countsAgainstQuota(pod: KubeObject, now: number): boolean {
  const phase = (pod['status'] as { phase?: string } | undefined)?.phase;
  if (phase === 'Succeeded' || phase === 'Failed') return false;
  const deletion = pod.metadata.deletionTimestamp;
  return !(deletion && Date.parse(deletion) <= now);
}

/** The quota's hard limits that the pod evaluator counts, by resource name. */
export function hardOf(quota: KubeObject): Usage {
  const hard = (quota['spec'] as { hard?: Record<string, unknown> } | undefined)?.hard ?? {};
  const out: Usage = new Map();
  for (const r of POD_RESOURCES) {
    const a = amountOf(hard[r]);
    if (a) out.set(r, a);
  }
  return out;
}

/** What the given pods use of each resource the quota limits: status.used. */
export function usedOf(hard: Usage, pods: readonly KubeObject[]): Usage {
  const used: Usage = new Map();
  for (const r of hard.keys()) used.set(r, { value: 0, binary: hard.get(r)?.binary ?? false });
  for (const pod of pods) {
    for (const [r, a] of podUsage(pod['spec'] ?? {})) {
      const u = used.get(r);
      if (u) used.set(r, { value: u.value + a.value, binary: u.binary || a.binary });
    }
  }
  return used;
}

const DECIMAL: [number, string][] = [
  [18, 'E'],
  [15, 'P'],
  [12, 'T'],
  [9, 'G'],
  [6, 'M'],
  [3, 'k'],
  [0, ''],
  [-3, 'm'],
  [-6, 'u'],
  [-9, 'n'],
];
const BINARY: [number, string][] = [
  [60, 'Ei'],
  [50, 'Pi'],
  [40, 'Ti'],
  [30, 'Gi'],
  [20, 'Mi'],
  [10, 'Ki'],
];

/** resource.Quantity's canonical String(): `500m`, `1`, `1Gi`, `1500M`, as the apiserver prints them. */
export function formatQuantity(a: Amount): string {
  const v = a.value;
  if (v === 0) return '0';
  if (a.binary && Number.isInteger(v) && Math.abs(v) >= 1024) {
    for (const [exp, suffix] of BINARY) {
      const unit = 2 ** exp;
      if (v % unit === 0) return `${v / unit}${suffix}`;
    }
    return String(v);
  }
  for (const [exp, suffix] of DECIMAL) {
    const scaled = v / 10 ** exp;
    const rounded = Math.round(scaled);
    if (rounded !== 0 && Math.abs(scaled - rounded) < 1e-9 * Math.abs(scaled)) return `${rounded}${suffix}`;
  }
  return `${Math.ceil(v * 1e9)}n`;
}

/** admission.go prettyPrint: `name=quantity` pairs sorted by name, comma-separated. */
function prettyPrint(usage: Usage, names: readonly string[]): string {
  return [...names]
    .sort()
    .map((r) => `${r}=${formatQuantity(usage.get(r) ?? { value: 0, binary: false })}`)
    .join(',');
}

/**
 * pods.go Constraints: every container (and init container) must state each of the quota's cpu and memory
 * resources. Before 1.24 the missing names are listed (`must specify limits.cpu,requests.cpu`); from 1.24
 * each names its containers (`must specify limits.cpu for: app; requests.cpu for: app,sidecar`).
 */
function constraintError(required: Set<string>, spec: PodSpecLike, minorVersion: number): string | undefined {
  const missing = new Map<string, Set<string>>();
  for (const c of [...(spec.containers ?? []), ...(spec.initContainers ?? [])]) {
    const has = new Set<string>(['pods', 'count/pods']);
    const requests = requestsOf(c);
    const limits = c.resources?.limits ?? {};
    if (requests['cpu'] !== undefined) has.add('cpu').add('requests.cpu');
    if (requests['memory'] !== undefined) has.add('memory').add('requests.memory');
    if (limits['cpu'] !== undefined) has.add('limits.cpu');
    if (limits['memory'] !== undefined) has.add('limits.memory');
    for (const r of required) {
      if (has.has(r)) continue;
      const names = missing.get(r) ?? new Set<string>();
      names.add(c.name ?? '');
      missing.set(r, names);
    }
  }
  if (missing.size === 0) return undefined;
  const resources = [...missing.keys()].sort();
  if (minorVersion < 24) return `must specify ${resources.join(',')}`;
  return `must specify ${resources.map((r) => `${r} for: ${[...(missing.get(r) ?? [])].sort().join(',')}`).join('; ')}`;
}

/**
 * Admits a pod create against the namespace's quotas (sorted by name), or throws the apiserver's 403:
 * `pods "<name>" is forbidden: exceeded quota: …` / `… failed quota: <quota>: must specify …`. Validating
 * admission runs after a generateName has become a name (a real 1.20 says `pods "web-8749799b5-92pml"`).
 */
export function admitPod(
  pod: KubeObject,
  quotas: readonly KubeObject[],
  podsInNamespace: () => readonly KubeObject[],
  now: number,
  minorVersion: number,
): void {
  if (quotas.length === 0) return;
  const name = pod.metadata.name || pod.metadata.generateName || 'Unknown';
  const forbidden = (message: string) =>
    new StatusError(403, 'Forbidden', `pods "${name}" is forbidden: ${message}`, { name, kind: 'pods' });
  const spec = (pod['spec'] ?? {}) as PodSpecLike;
  const sorted = [...quotas].sort((a, b) => (a.metadata.name < b.metadata.name ? -1 : 1));
  const relevant: { quota: KubeObject; hard: Usage }[] = [];
  for (const quota of sorted) {
    const hard = hardOf(quota);
    if (hard.size === 0) continue;
    const required = new Set([...hard.keys()].filter((r) => VALIDATION_SET.has(r)));
    const err = constraintError(required, spec, minorVersion);
    if (err) throw forbidden(`failed quota: ${quota.metadata.name}: ${err}`);
    relevant.push({ quota, hard });
  }
  if (relevant.length === 0) return;
  const counted = podsInNamespace().filter((p) => countsAgainstQuota(p, now));
  const requested = podUsage(spec);
  for (const { quota, hard } of relevant) {
    const used = usedOf(hard, counted);
    const exceeded: string[] = [];
    for (const [r, limit] of hard) {
      const req = requested.get(r);
      if (!req) continue;
      if ((used.get(r)?.value ?? 0) + req.value > limit.value + 1e-12) exceeded.push(r);
    }
    if (exceeded.length > 0) {
      throw forbidden(
        `exceeded quota: ${quota.metadata.name}, requested: ${prettyPrint(requested, exceeded)}, used: ${prettyPrint(used, exceeded)}, limited: ${prettyPrint(hard, exceeded)}`,
      );
    }
  }
}

/** The status a quota controller writes: hard as specified, used by the counted pods. */
export function quotaStatus(
  quota: KubeObject,
  pods: readonly KubeObject[],
  now: number,
): Record<string, unknown> {
  const hardSpec = (quota['spec'] as { hard?: Record<string, unknown> } | undefined)?.hard ?? {};
  const hard = hardOf(quota);
  const used = usedOf(
    hard,
    pods.filter((p) => countsAgainstQuota(p, now)),
  );
  const usedOut: Record<string, string> = {};
  for (const r of Object.keys(hardSpec)) {
    const u = used.get(r);
    usedOut[r] = u ? formatQuantity(u) : '0';
  }
  return { hard: { ...hardSpec }, used: usedOut };
}
