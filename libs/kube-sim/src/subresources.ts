/**
 * The subresources beyond `status` (which the verbs serve as the object itself): a pod's `log`, a
 * workload's `scale` (read, replaced or patched as an autoscaling/v1 Scale), a pod's `eviction` and
 * `binding`. bindPod is shared with the simulated scheduler.
 */
import { errors } from './errors.js';
import { type Res, boolParam, intParam, send, successStatus } from './http-io.js';
import type { ResourceType } from './resources.js';
import type { Route } from './routing.js';
import { labelSelectorToString } from './selectors.js';
import type { Store } from './store.js';
import { timestamp } from './store-values.js';
import { type KubeObject, type LabelSelector, isRecord } from './types.js';
import { type LogLine, parseRfc3339Ns, rfc3339Nano } from './controllers/container-log.js';
import type { PodLogRead } from './controllers/container-logs.js';

export interface LogRequest {
  namespace: string;
  name: string;
  container?: string | undefined;
  previous: boolean;
}

/** The pods/log query parameters that shape the answer, checked as the apiserver does. */
interface LogShape {
  follow: boolean;
  timestamps: boolean;
  tailLines: number | undefined;
  sinceNs: bigint | undefined;
  limitBytes: number | undefined;
}

function logShape(q: URLSearchParams, nowMs: number): LogShape {
  const tailLines = intParam(q, 'tailLines');
  const sinceSeconds = intParam(q, 'sinceSeconds');
  const limitBytes = intParam(q, 'limitBytes');
  const sinceTime = q.get('sinceTime');
  if (sinceSeconds !== undefined && sinceTime !== null) {
    throw errors.badRequest('at most one of `sinceTime` or `sinceSeconds` may be specified');
  }
  if (sinceSeconds !== undefined && sinceSeconds < 1)
    throw errors.badRequest('sinceSeconds: must be greater than 0');
  if (tailLines !== undefined && tailLines < 0)
    throw errors.badRequest('tailLines: must be greater than or equal to 0');
  if (limitBytes !== undefined && limitBytes < 1)
    throw errors.badRequest('limitBytes: must be greater than 0');
  let sinceNs: bigint | undefined;
  if (sinceTime !== null) {
    sinceNs = parseRfc3339Ns(sinceTime);
    if (sinceNs === undefined) throw errors.badRequest(`invalid value for sinceTime: ${sinceTime}`);
  } else if (sinceSeconds !== undefined) {
    sinceNs = BigInt(nowMs - sinceSeconds * 1000) * 1_000_000n;
  }
  return {
    follow: boolParam(q, 'follow'),
    timestamps: boolParam(q, 'timestamps'),
    tailLines,
    sinceNs,
    limitBytes,
  };
}

/**
 * GET pods/log as the kubelet answers it: the run's lines (stdout and stderr merged, as the API has no
 * way to tell them apart), the last `tailLines`, those at or after `sinceTime`/`sinceSeconds`, each
 * prefixed by its RFC3339Nano time with `timestamps`, cut at `limitBytes`; with `follow`, kept open and
 * written to as the container writes, until it stops or the client goes.
 */
export function sendLog(
  res: Res,
  logs: ((req: LogRequest) => PodLogRead) | undefined,
  pod: KubeObject,
  q: URLSearchParams,
  nowMs: number,
): void {
  const shape = logShape(q, nowMs);
  const read = logs?.({
    namespace: pod.metadata.namespace ?? '',
    name: pod.metadata.name,
    container: q.get('container') ?? undefined,
    previous: boolParam(q, 'previous'),
  }) ?? { lines: [] };
  let lines = read.lines;
  if (shape.tailLines !== undefined) lines = shape.tailLines === 0 ? [] : lines.slice(-shape.tailLines);
  const since = shape.sinceNs;
  const shown = (l: LogLine): boolean => since === undefined || l.timeNs >= since;
  const format = (l: LogLine): string => `${shape.timestamps ? `${rfc3339Nano(l.timeNs)} ` : ''}${l.text}\n`;
  let budget = shape.limitBytes ?? Infinity;
  const clip = (text: string): string => {
    const bytes = Buffer.from(text);
    const out = bytes.length > budget ? bytes.subarray(0, budget).toString() : text;
    budget -= Math.min(bytes.length, budget);
    return out;
  };
  const head = clip(lines.filter(shown).map(format).join(''));
  if (!shape.follow || !read.live || budget <= 0) {
    res.writeHead(200, { 'Content-Type': 'text/plain', 'Content-Length': Buffer.byteLength(head) });
    res.end(head);
    return;
  }
  res.writeHead(200, { 'Content-Type': 'text/plain', 'Transfer-Encoding': 'chunked' });
  if (head) res.write(head);
  const stop = read.live.follow({
    line: (l) => {
      if (!shown(l)) return;
      res.write(clip(format(l)));
      if (budget <= 0) {
        stop();
        res.end();
      }
    },
    end: () => res.end(),
  });
  res.on('close', stop);
}

export function scaleOf(o: KubeObject): object {
  const spec = (o['spec'] ?? {}) as { replicas?: number; selector?: LabelSelector };
  const status = (o['status'] ?? {}) as { replicas?: number };
  return {
    kind: 'Scale',
    apiVersion: 'autoscaling/v1',
    metadata: {
      name: o.metadata.name,
      namespace: o.metadata.namespace,
      uid: o.metadata.uid,
      resourceVersion: o.metadata.resourceVersion,
      creationTimestamp: o.metadata.creationTimestamp,
    },
    // Scale's spec.replicas is omitempty upstream: a zero is left out.
    spec: spec.replicas ? { replicas: spec.replicas } : {},
    status: {
      replicas: status.replicas ?? 0,
      selector: spec.selector ? labelSelectorToString(spec.selector) : '',
    },
  };
}

/** A Scale written (PUT, or the result of a PATCH): its replicas go to the object's spec. */
export function updateScale(store: Store, r: Route, raw: unknown, isDryRun: boolean): object {
  const old = store.mustGet(r.resource, r.namespace, r.name ?? '');
  if (!isRecord(raw)) throw errors.badRequest('the body of the request must be a JSON object');
  const spec = isRecord(raw['spec']) ? raw['spec'] : {};
  const replicas = spec['replicas'];
  if (typeof replicas !== 'number' || !Number.isInteger(replicas) || replicas < 0) {
    throw errors.invalid('Scale', 'autoscaling', old.metadata.name, [
      {
        reason: 'FieldValueInvalid',
        field: 'spec.replicas',
        message: 'Invalid value: must be greater than or equal to 0',
      },
    ]);
  }
  const meta = isRecord(raw['metadata']) ? raw['metadata'] : {};
  if (
    typeof meta['resourceVersion'] === 'string' &&
    meta['resourceVersion'] &&
    meta['resourceVersion'] !== old.metadata.resourceVersion
  ) {
    throw errors.conflict(r.resource.plural, r.resource.group, old.metadata.name);
  }
  const next = structuredClone(old);
  (next['spec'] as Record<string, unknown>)['replicas'] = replicas;
  return scaleOf(store.replace(r.resource, next, { dryRun: isDryRun }));
}

/** POST pods/eviction: deletes the pod with the Eviction's grace period. */
export function evict(store: Store, res: Res, r: Route, body: unknown): void {
  const opts = isRecord(body) && isRecord(body['deleteOptions']) ? body['deleteOptions'] : {};
  const grace = typeof opts['gracePeriodSeconds'] === 'number' ? opts['gracePeriodSeconds'] : undefined;
  store.delete(r.resource, r.namespace, r.name ?? '', { gracePeriodSeconds: grace });
  send(res, 201, successStatus({ code: 201 }));
}

/** POST pods/binding: assigns an unscheduled pod to the Binding's target node. */
export function bind(store: Store, res: Res, r: Route, body: unknown): void {
  const target = isRecord(body) && isRecord(body['target']) ? body['target'] : undefined;
  const node = target?.['name'];
  if (typeof node !== 'string' || !node) throw errors.badRequest('binding target name is required');
  const pod = store.mustGet(r.resource, r.namespace, r.name ?? '');
  const spec = (pod['spec'] ?? {}) as { nodeName?: string };
  if (spec.nodeName) {
    throw errors.conflict(
      'pods',
      '',
      pod.metadata.name,
      `pod ${pod.metadata.name} is already assigned to node "${spec.nodeName}"`,
    );
  }
  bindPod(store, r.resource, pod, node);
  send(res, 201, successStatus({ code: 201 }));
}

/** Sets a pod's node and its PodScheduled condition (the Binding subresource; the scheduler uses it too). */
export function bindPod(store: Store, podType: ResourceType, pod: KubeObject, node: string): KubeObject {
  const next = structuredClone(pod);
  (next['spec'] as Record<string, unknown>)['nodeName'] = node;
  const stored = store.replace(podType, next);
  const withStatus = structuredClone(stored);
  const status = (withStatus['status'] ?? {}) as { conditions?: Record<string, unknown>[] };
  const now = timestamp(store.now());
  status.conditions = [
    ...(status.conditions ?? []).filter((c) => c['type'] !== 'PodScheduled'),
    { type: 'PodScheduled', status: 'True', lastProbeTime: null, lastTransitionTime: now },
  ];
  withStatus['status'] = status;
  return store.replace(podType, withStatus, { subresource: 'status' });
}
