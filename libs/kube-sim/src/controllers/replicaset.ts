/**
 * The ReplicaSet controller: keeps `spec.replicas` active pods from the template, owned by the ReplicaSet
 * (found through the store's owner index, never by scanning pods), deletes the least valuable pods first
 * when scaling down, and reports the status counters upstream reports.
 */
import { StatusError } from '../errors.js';
import type { KubeObject, LabelSelector } from '../types.js';
import { matchesLabelSelector } from '../selectors.js';
import type { Context } from './context.js';
import {
  controllerOf,
  isActive,
  isAvailable,
  isReady,
  msUntilAvailable,
  omitZero,
  ownerRef,
  podSpec,
  podStatus,
  splitKey,
  timestamp,
} from './pods.js';
import { KeyedController } from './queue.js';

const RS_SOURCE = { component: 'replicaset-controller' };
/** Pods created or deleted per sync; the rest follow on the next one (upstream's burstReplicas). */
const BURST = 500;

export interface ReplicaSetSpec {
  replicas?: number;
  minReadySeconds?: number;
  selector?: LabelSelector;
  template?: {
    metadata?: { labels?: Record<string, string>; annotations?: Record<string, string> };
    spec?: unknown;
  };
}

export const REPLICA_FAILURE = 'ReplicaFailure';

export interface ReplicaSetCondition {
  type: string;
  status: 'True' | 'False' | 'Unknown';
  lastTransitionTime?: string;
  reason?: string;
  message?: string;
}

function isCondition(c: unknown, type: string): boolean {
  return typeof c === 'object' && c !== null && (c as { type?: unknown }).type === type;
}

export interface ReplicaSetStatus {
  replicas: number;
  fullyLabeledReplicas?: number;
  readyReplicas?: number;
  availableReplicas?: number;
  observedGeneration?: number;
  conditions?: unknown[];
}

/** Pods whose controller is `owner`, through the store's ownerReferences index. */
export function ownedPods(ctx: Context, owner: KubeObject): KubeObject[] {
  const out: KubeObject[] = [];
  for (const { resource, object } of ctx.store.dependentsOf(owner.metadata.uid)) {
    if (resource.kind !== 'Pod' || resource.group !== '') continue;
    if (controllerOf(object)?.uid === owner.metadata.uid) out.push(object);
  }
  return out;
}

/** Builds a pod from a workload's template, as controller.GetPodFromTemplate does. */
export function podFromTemplate(
  owner: KubeObject,
  template: ReplicaSetSpec['template'],
  name: string,
  generateName: string | undefined,
): KubeObject {
  const meta = template?.metadata ?? {};
  const pod: KubeObject = {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: {
      name,
      namespace: owner.metadata.namespace ?? '',
      uid: '',
      resourceVersion: '',
      creationTimestamp: '',
      ownerReferences: [ownerRef(owner)],
    },
    spec: structuredClone(template?.spec ?? {}),
  };
  if (generateName) pod.metadata.generateName = generateName;
  if (meta.labels) pod.metadata.labels = { ...meta.labels };
  if (meta.annotations) pod.metadata.annotations = { ...meta.annotations };
  return pod;
}

/**
 * Creates a pod with `generateName: <owner>-`, as controller.GetPodFromTemplate does, so the apiserver
 * picks the name (and a quota refusal names the pod `<owner>-`, as upstream's); a name collision (409,
 * the store could not generate a free name) draws again.
 */
export function createGeneratedPod(
  ctx: Context,
  owner: KubeObject,
  template: ReplicaSetSpec['template'],
): KubeObject {
  const prefix = `${owner.metadata.name.slice(0, 57)}-`;
  for (let attempt = 0; ; attempt++) {
    try {
      return ctx.store.create(ctx.types.pods, podFromTemplate(owner, template, '', prefix));
    } catch (err) {
      if (!(err instanceof StatusError && err.code === 409 && attempt < 10)) throw err;
    }
  }
}

/** controller.ActivePods ordering: the pods to delete first come first. */
export function deletionOrder(a: KubeObject, b: KubeObject): number {
  const sa = podSpec(a);
  const sb = podSpec(b);
  // Unscheduled before scheduled.
  if (!sa.nodeName !== !sb.nodeName) return sa.nodeName ? 1 : -1;
  // Pending < Unknown < Running.
  const ranks: Record<string, number> = { Pending: 0, Unknown: 1, Running: 2 };
  const rank = (p: KubeObject) => ranks[podStatus(p).phase ?? 'Pending'] ?? 0;
  if (rank(a) !== rank(b)) return rank(a) - rank(b);
  // Not ready before ready.
  if (isReady(a) !== isReady(b)) return isReady(a) ? 1 : -1;
  // Ready for less time first.
  const readySince = (p: KubeObject) =>
    podStatus(p).conditions?.find((c) => c.type === 'Ready')?.lastTransitionTime ?? '';
  if (isReady(a) && readySince(a) !== readySince(b)) return readySince(a) > readySince(b) ? -1 : 1;
  // More restarts first.
  const restarts = (p: KubeObject) =>
    Math.max(0, ...(podStatus(p).containerStatuses ?? []).map((c) => c.restartCount));
  if (restarts(a) !== restarts(b)) return restarts(b) - restarts(a);
  // Newer first.
  const created = (p: KubeObject) => p.metadata.creationTimestamp;
  if (created(a) !== created(b)) return created(a) > created(b) ? -1 : 1;
  return a.metadata.name < b.metadata.name ? -1 : 1;
}

export class ReplicaSetController extends KeyedController {
  constructor(private readonly ctx: Context) {
    super('replicaset', ctx.timers);
  }

  protected sync(k: string): void {
    const { store, types } = this.ctx;
    const { namespace, name } = splitKey(k);
    const rs = store.get(types.replicasets, namespace, name);
    // A ReplicaSet being deleted is left to the garbage collector, as upstream.
    if (!rs || rs.metadata.deletionTimestamp) return;
    const spec = (rs['spec'] ?? {}) as ReplicaSetSpec;
    const want = spec.replicas ?? 1;
    const active = ownedPods(this.ctx, rs).filter(isActive);
    const diff = active.length - want;
    let failure: StatusError | undefined;
    if (diff < 0) {
      const n = Math.min(-diff, BURST);
      // slowStartBatch: batches of 1, 2, 4, …; a batch with a failed create ends the sync (a quota refusal
      // costs a few calls, not n), and the failure is returned for the queue to retry with back-off.
      for (let done = 0, batch = 1; done < n && !failure; done += batch, batch *= 2) {
        for (let i = 0; i < Math.min(batch, n - done); i++) {
          try {
            const pod = createGeneratedPod(this.ctx, rs, spec.template);
            this.ctx.recorder.record(
              rs,
              'Normal',
              'SuccessfulCreate',
              `Created pod: ${pod.metadata.name}`,
              RS_SOURCE,
            );
          } catch (err) {
            if (!(err instanceof StatusError)) throw err;
            // controller_utils.go createPods: "Error creating: %v" (not for a namespace being terminated).
            if (!err.message.includes('because it is being terminated')) {
              this.ctx.recorder.record(
                rs,
                'Warning',
                'FailedCreate',
                `Error creating: ${err.message}`,
                RS_SOURCE,
              );
            }
            failure ??= err;
          }
        }
      }
      if (-diff > BURST && !failure) this.queue.add(k);
    } else if (diff > 0) {
      const victims = [...active].sort(deletionOrder).slice(0, Math.min(diff, BURST));
      for (const pod of victims) {
        store.delete(types.pods, pod.metadata.namespace, pod.metadata.name, {
          preconditions: { uid: pod.metadata.uid },
        });
        this.ctx.recorder.record(
          rs,
          'Normal',
          'SuccessfulDelete',
          `Deleted pod: ${pod.metadata.name}`,
          RS_SOURCE,
        );
      }
    }
    this.updateStatus(k, rs, spec, failure, diff);
    if (failure) throw failure;
  }

  private updateStatus(
    k: string,
    rs: KubeObject,
    spec: ReplicaSetSpec,
    failure?: StatusError,
    diff = 0,
  ): void {
    const { store, types } = this.ctx;
    const now = this.ctx.now();
    const minReady = spec.minReadySeconds ?? 0;
    const pods = ownedPods(this.ctx, rs).filter(isActive);
    const templateLabels = spec.template?.metadata?.labels ?? {};
    let soonest = Infinity;
    const status: ReplicaSetStatus = {
      replicas: pods.length,
      fullyLabeledReplicas: pods.filter((p) =>
        matchesLabelSelector(p.metadata.labels, { matchLabels: templateLabels }),
      ).length,
      readyReplicas: pods.filter(isReady).length,
      availableReplicas: pods.filter((p) => {
        const ok = isAvailable(p, minReady, now);
        const wait = msUntilAvailable(p, minReady, now);
        if (!ok && wait > 0) soonest = Math.min(soonest, wait);
        return ok;
      }).length,
      observedGeneration: rs.metadata.generation ?? 1,
    };
    const previous = (rs['status'] ?? {}) as ReplicaSetStatus;
    if (previous.conditions) status.conditions = previous.conditions;
    // replica_set_utils.go calculateStatus: a failed manageReplicas sets ReplicaFailure (kept as first set
    // while it lasts); a sync without one drops it.
    const failed = previous.conditions?.some((c) => isCondition(c, REPLICA_FAILURE));
    if (failure && !failed) {
      const cond: ReplicaSetCondition = {
        type: REPLICA_FAILURE,
        status: 'True',
        lastTransitionTime: timestamp(now),
        reason: diff < 0 ? 'FailedCreate' : 'FailedDelete',
        message: failure.message,
      };
      status.conditions = [...(previous.conditions ?? []), cond];
    } else if (!failure && failed) {
      const rest = (previous.conditions ?? []).filter((c) => !isCondition(c, REPLICA_FAILURE));
      if (rest.length) status.conditions = rest;
      else delete status.conditions;
    }
    omitZero(status, ['fullyLabeledReplicas', 'readyReplicas', 'availableReplicas']);
    const current = store.get(types.replicasets, rs.metadata.namespace, rs.metadata.name) ?? rs;
    store.replace(types.replicasets, { ...current, status }, { subresource: 'status' });
    // A pod that is ready but not yet for minReadySeconds becomes available without any event: look again then.
    if (Number.isFinite(soonest)) this.queue.addAfter(k, soonest + 50);
  }
}
