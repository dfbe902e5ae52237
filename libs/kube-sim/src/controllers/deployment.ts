/**
 * The Deployment controller, after upstream's deployment_controller/rolling.go/sync.go: one ReplicaSet per
 * pod template (`<deploy>-<pod-template-hash>`), rolling updates within maxSurge/maxUnavailable (or
 * Recreate), revision annotations, history cleanup, and the status and conditions `kubectl rollout status`
 * reads.
 * Kept in one file past 500 lines: it is one controller's sync, whose steps read one another's state.
 */
import type { KubeObject, LabelSelector } from '../types.js';
import type { Context } from './context.js';
import { POD_TEMPLATE_HASH, equalIgnoringHash, templateHash } from './hash.js';
import { controllerOf, omitZero, ownerRef, splitKey, timestamp } from './pods.js';
import { KeyedController } from './queue.js';
import {
  REPLICA_FAILURE,
  type ReplicaSetCondition,
  type ReplicaSetSpec,
  type ReplicaSetStatus,
} from './replicaset.js';

const SOURCE = { component: 'deployment-controller' };
const REVISION = 'deployment.kubernetes.io/revision';
const DESIRED = 'deployment.kubernetes.io/desired-replicas';
const MAX = 'deployment.kubernetes.io/max-replicas';
const REVISION_HISTORY = 'deployment.kubernetes.io/revision-history';
/** Annotations a Deployment does not pass on to its ReplicaSets. */
const NOT_COPIED = [
  REVISION,
  REVISION_HISTORY,
  DESIRED,
  MAX,
  'kubectl.kubernetes.io/last-applied-configuration',
];

type IntOrPercent = number | string | undefined;

interface DeploymentSpec {
  replicas?: number;
  selector?: LabelSelector;
  template?: ReplicaSetSpec['template'];
  strategy?: {
    type?: 'RollingUpdate' | 'Recreate';
    rollingUpdate?: { maxSurge?: IntOrPercent; maxUnavailable?: IntOrPercent };
  };
  minReadySeconds?: number;
  revisionHistoryLimit?: number;
  progressDeadlineSeconds?: number;
  paused?: boolean;
}

export interface DeploymentCondition {
  type: string;
  status: 'True' | 'False' | 'Unknown';
  lastUpdateTime: string;
  lastTransitionTime: string;
  reason: string;
  message: string;
}

interface DeploymentStatus {
  observedGeneration?: number;
  replicas?: number;
  updatedReplicas?: number;
  readyReplicas?: number;
  availableReplicas?: number;
  unavailableReplicas?: number;
  conditions?: DeploymentCondition[];
  collisionCount?: number;
}

function rsSpec(rs: KubeObject): ReplicaSetSpec {
  return (rs['spec'] as ReplicaSetSpec | undefined) ?? {};
}
function rsStatus(rs: KubeObject): Partial<ReplicaSetStatus> {
  return (rs['status'] as Partial<ReplicaSetStatus> | undefined) ?? {};
}
function replicasOf(rs: KubeObject): number {
  return rsSpec(rs).replicas ?? 0;
}
function revisionOf(rs: KubeObject): number {
  const n = Number(rs.metadata.annotations?.[REVISION] ?? 0);
  return Number.isFinite(n) ? n : 0;
}

/** intstr.GetScaledValueFromIntOrPercent. */
function scaled(v: IntOrPercent, total: number, roundUp: boolean): number {
  if (typeof v === 'number') return v;
  if (typeof v === 'string' && v.endsWith('%')) {
    const pct = Number(v.slice(0, -1));
    if (!Number.isFinite(pct)) return 0;
    const x = (pct * total) / 100;
    return roundUp ? Math.ceil(x) : Math.floor(x);
  }
  const n = Number(v ?? 0);
  return Number.isFinite(n) ? n : 0;
}

/** deploymentutil.ResolveFenceposts: surge rounds up, unavailable down, and they are never both 0. */
export function fenceposts(spec: DeploymentSpec): { surge: number; unavailable: number } {
  const replicas = spec.replicas ?? 1;
  if (spec.strategy?.type === 'Recreate') return { surge: 0, unavailable: replicas };
  const ru = spec.strategy?.rollingUpdate ?? {};
  const surge = scaled(ru.maxSurge ?? '25%', replicas, true);
  let unavailable = scaled(ru.maxUnavailable ?? '25%', replicas, false);
  if (surge === 0 && unavailable === 0) unavailable = 1;
  return { surge, unavailable };
}

export class DeploymentController extends KeyedController {
  constructor(private readonly ctx: Context) {
    super('deployment', ctx.timers);
  }

  protected sync(k: string): void {
    const { store, types } = this.ctx;
    const { namespace, name } = splitKey(k);
    let d = store.get(types.deployments, namespace, name);
    if (!d || d.metadata.deletionTimestamp) return;
    const spec = (d['spec'] ?? {}) as DeploymentSpec;
    const all = this.replicaSets(d);
    const status = structuredClone((d['status'] ?? {}) as DeploymentStatus);

    // The ReplicaSet of the current template, the oldest if several match.
    let newRS = all
      .filter((rs) => equalIgnoringHash(rsSpec(rs).template, spec.template))
      .sort((a, b) => (a.metadata.creationTimestamp < b.metadata.creationTimestamp ? -1 : 1))[0];
    let old = all.filter((rs) => rs !== newRS);

    if (spec.paused) {
      this.writeStatus(d, spec, status, all, newRS, false);
      return;
    }
    const maxOldRevision = Math.max(0, ...old.map(revisionOf));
    if (!newRS) {
      newRS = this.createReplicaSet(d, spec, status, all, maxOldRevision + 1);
      setCondition(
        status,
        'Progressing',
        'True',
        'NewReplicaSetCreated',
        `Created new replica set "${newRS.metadata.name}"`,
        this.now(),
      );
    } else {
      newRS = this.syncRevision(spec, newRS, maxOldRevision);
      if (!status.conditions?.some((c) => c.type === 'Progressing')) {
        setCondition(
          status,
          'Progressing',
          'True',
          'FoundNewReplicaSet',
          `Found new replica set "${newRS.metadata.name}"`,
          this.now(),
        );
      }
    }
    d = this.syncDeploymentRevision(d, newRS);
    old = old.filter((rs) => rs.metadata.uid !== newRS.metadata.uid);

    if (spec.strategy?.type === 'Recreate') this.rolloutRecreate(d, spec, newRS, old);
    else this.rolloutRolling(d, spec, newRS, old);

    const fresh = this.replicaSets(d);
    const freshNew = fresh.find((rs) => rs.metadata.uid === newRS.metadata.uid);
    const complete = this.writeStatus(d, spec, status, fresh, freshNew, true);
    if (complete)
      this.cleanup(
        d,
        spec,
        fresh.filter((rs) => rs !== freshNew),
      );
  }

  private now(): string {
    return timestamp(this.ctx.now());
  }

  private replicaSets(d: KubeObject): KubeObject[] {
    const out: KubeObject[] = [];
    for (const { resource, object } of this.ctx.store.dependentsOf(d.metadata.uid)) {
      if (resource !== this.ctx.types.replicasets || object.metadata.deletionTimestamp) continue;
      if (controllerOf(object)?.uid === d.metadata.uid) out.push(object);
    }
    return out;
  }

  private createReplicaSet(
    d: KubeObject,
    spec: DeploymentSpec,
    status: DeploymentStatus,
    all: KubeObject[],
    revision: number,
  ): KubeObject {
    const { store, types } = this.ctx;
    const replicas = spec.replicas ?? 1;
    const { surge } = fenceposts(spec);
    // Upstream NewRSNewReplicas: the new set starts as large as the surge allows.
    let initial = replicas;
    if (spec.strategy?.type !== 'Recreate') {
      const current = all.reduce((n, rs) => n + replicasOf(rs), 0);
      initial = Math.max(0, Math.min(replicas + surge - current, replicas));
    } else if (all.some((rs) => replicasOf(rs) > 0 || (rsStatus(rs).replicas ?? 0) > 0)) {
      initial = 0;
    }
    for (;;) {
      const hash = templateHash(spec.template, status.collisionCount ?? 0);
      const rsName = `${d.metadata.name}-${hash}`;
      const existing = store.get(types.replicasets, d.metadata.namespace, rsName);
      if (existing) {
        // A ReplicaSet with our name but another template or owner: hash again with a bumped collisionCount.
        status.collisionCount = (status.collisionCount ?? 0) + 1;
        continue;
      }
      const template = structuredClone(spec.template ?? {});
      template.metadata = {
        ...template.metadata,
        labels: { ...(template.metadata?.labels ?? {}), [POD_TEMPLATE_HASH]: hash },
      };
      const selector: LabelSelector = structuredClone(spec.selector ?? {});
      selector.matchLabels = { ...(selector.matchLabels ?? {}), [POD_TEMPLATE_HASH]: hash };
      const annotations: Record<string, string> = {};
      for (const [k, v] of Object.entries(d.metadata.annotations ?? {}))
        if (!NOT_COPIED.includes(k)) annotations[k] = v;
      annotations[DESIRED] = String(replicas);
      annotations[MAX] = String(replicas + surge);
      annotations[REVISION] = String(revision);
      const rs = store.create(types.replicasets, {
        apiVersion: 'apps/v1',
        kind: 'ReplicaSet',
        metadata: {
          name: rsName,
          namespace: d.metadata.namespace ?? '',
          uid: '',
          resourceVersion: '',
          creationTimestamp: '',
          labels: { ...(template.metadata.labels ?? {}) },
          annotations,
          ownerReferences: [ownerRef(d)],
        },
        spec: {
          replicas: initial,
          ...(spec.minReadySeconds ? { minReadySeconds: spec.minReadySeconds } : {}),
          selector,
          template,
        },
      });
      if (initial > 0) this.scaledEvent(d, rsName, 0, initial);
      return rs;
    }
  }

  /** A template rolled back to an older ReplicaSet makes it the newest revision again. */
  private syncRevision(spec: DeploymentSpec, rs: KubeObject, maxOldRevision: number): KubeObject {
    const want = Math.max(revisionOf(rs), maxOldRevision + 1);
    const replicas = spec.replicas ?? 1;
    const max = replicas + fenceposts(spec).surge;
    const a = rs.metadata.annotations ?? {};
    if (a[REVISION] === String(want) && a[DESIRED] === String(replicas) && a[MAX] === String(max)) return rs;
    const next = structuredClone(rs);
    next.metadata.annotations = {
      ...a,
      [REVISION]: String(want),
      [DESIRED]: String(replicas),
      [MAX]: String(max),
    };
    return this.ctx.store.replace(this.ctx.types.replicasets, next);
  }

  private syncDeploymentRevision(d: KubeObject, newRS: KubeObject): KubeObject {
    const revision = newRS.metadata.annotations?.[REVISION];
    if (!revision || d.metadata.annotations?.[REVISION] === revision) return d;
    const next = structuredClone(d);
    next.metadata.annotations = { ...(next.metadata.annotations ?? {}), [REVISION]: revision };
    return this.ctx.store.replace(this.ctx.types.deployments, next);
  }

  private scale(d: KubeObject, rs: KubeObject, to: number): KubeObject {
    const from = replicasOf(rs);
    if (from === to) return rs;
    const next = structuredClone(rs);
    (next['spec'] as ReplicaSetSpec).replicas = to;
    const stored = this.ctx.store.replace(this.ctx.types.replicasets, next);
    this.scaledEvent(d, rs.metadata.name, from, to);
    return stored;
  }

  private scaledEvent(d: KubeObject, rsName: string, from: number, to: number): void {
    const dir = to > from ? 'up' : 'down';
    this.ctx.recorder.record(
      d,
      'Normal',
      'ScalingReplicaSet',
      `Scaled ${dir} replica set ${rsName} from ${from} to ${to}`,
      SOURCE,
    );
  }

  /** rolling.go rolloutRolling: reconcileNewReplicaSet, then reconcileOldReplicaSets. */
  private rolloutRolling(d: KubeObject, spec: DeploymentSpec, newRS: KubeObject, old: KubeObject[]): void {
    const replicas = spec.replicas ?? 1;
    const { surge, unavailable } = fenceposts(spec);
    const all = [newRS, ...old];
    const total = () => all.reduce((n, rs) => n + replicasOf(rs), 0);

    // Scale the new ReplicaSet up within the surge, or down to the desired count.
    const newCount = replicasOf(newRS);
    if (newCount > replicas) {
      all[0] = newRS = this.scale(d, newRS, replicas);
    } else if (newCount < replicas) {
      const room = replicas + surge - total();
      const up = Math.min(room, replicas - newCount);
      if (up > 0) all[0] = newRS = this.scale(d, newRS, newCount + up);
    }

    const oldCount = old.reduce((n, rs) => n + replicasOf(rs), 0);
    if (oldCount === 0) return;
    const minAvailable = replicas - unavailable;
    const newUnavailable = replicasOf(newRS) - (rsStatus(newRS).availableReplicas ?? 0);
    const maxScaledDown = total() - minAvailable - newUnavailable;
    if (maxScaledDown <= 0) return;

    // Old pods that are not available can go first: they do not count toward availability anyway.
    const byAge = [...old].sort((a, b) =>
      a.metadata.creationTimestamp < b.metadata.creationTimestamp ? -1 : 1,
    );
    let cleaned = 0;
    for (let i = 0; i < byAge.length && cleaned < maxScaledDown; i++) {
      const rs = byAge[i] as KubeObject;
      const count = replicasOf(rs);
      const unhealthy = count - (rsStatus(rs).availableReplicas ?? 0);
      if (count === 0 || unhealthy <= 0) continue;
      const down = Math.min(maxScaledDown - cleaned, unhealthy);
      byAge[i] = this.scale(d, rs, count - down);
      cleaned += down;
    }

    // Then available ones, as long as minAvailable holds.
    const available = [newRS, ...byAge].reduce((n, rs) => n + (rsStatus(rs).availableReplicas ?? 0), 0);
    let budget = Math.min(available - minAvailable, maxScaledDown - cleaned);
    for (let i = 0; i < byAge.length && budget > 0; i++) {
      const rs = byAge[i] as KubeObject;
      const count = replicasOf(rs);
      if (count === 0) continue;
      const down = Math.min(count, budget);
      byAge[i] = this.scale(d, rs, count - down);
      budget -= down;
    }
  }

  /** Recreate: every old pod goes before the new ReplicaSet scales up. */
  private rolloutRecreate(d: KubeObject, spec: DeploymentSpec, newRS: KubeObject, old: KubeObject[]): void {
    for (const rs of old) if (replicasOf(rs) > 0) this.scale(d, rs, 0);
    const oldPodsLeft = old.some((rs) => (rsStatus(rs).replicas ?? 0) > 0 || replicasOf(rs) > 0);
    if (!oldPodsLeft || replicasOf(newRS) > 0) this.scale(d, newRS, spec.replicas ?? 1);
  }

  /** Keeps revisionHistoryLimit of the old, scaled-down ReplicaSets; the oldest revisions go first. */
  private cleanup(d: KubeObject, spec: DeploymentSpec, old: KubeObject[]): void {
    const limit = spec.revisionHistoryLimit ?? 10;
    const idle = old
      .filter((rs) => replicasOf(rs) === 0 && (rsStatus(rs).replicas ?? 0) === 0)
      .sort((a, b) => revisionOf(a) - revisionOf(b));
    const excess = idle.length - limit;
    for (let i = 0; i < excess; i++) {
      const rs = idle[i] as KubeObject;
      this.ctx.store.delete(this.ctx.types.replicasets, d.metadata.namespace, rs.metadata.name, {
        preconditions: { uid: rs.metadata.uid },
      });
    }
  }

  /** calculateStatus + syncRolloutStatus; returns whether the rollout is complete. */
  private writeStatus(
    d: KubeObject,
    spec: DeploymentSpec,
    status: DeploymentStatus,
    all: KubeObject[],
    newRS: KubeObject | undefined,
    trackProgress: boolean,
  ): boolean {
    const { store, types } = this.ctx;
    const previous = (d['status'] ?? {}) as DeploymentStatus;
    const replicas = spec.replicas ?? 1;
    const sum = (f: (rs: KubeObject) => number) => all.reduce((n, rs) => n + f(rs), 0);
    const available = sum((rs) => rsStatus(rs).availableReplicas ?? 0);
    const next: DeploymentStatus = {
      observedGeneration: d.metadata.generation ?? 1,
      replicas: sum((rs) => rsStatus(rs).replicas ?? 0),
      updatedReplicas: newRS ? (rsStatus(newRS).replicas ?? 0) : 0,
      readyReplicas: sum((rs) => rsStatus(rs).readyReplicas ?? 0),
      availableReplicas: available,
      unavailableReplicas: Math.max(0, sum(replicasOf) - available),
    };
    if (status.conditions) next.conditions = status.conditions;
    if (status.collisionCount !== undefined) next.collisionCount = status.collisionCount;
    const now = this.now();
    const { unavailable } = fenceposts(spec);
    if (available >= replicas - unavailable) {
      setCondition(
        next,
        'Available',
        'True',
        'MinimumReplicasAvailable',
        'Deployment has minimum availability.',
        now,
      );
    } else {
      setCondition(
        next,
        'Available',
        'False',
        'MinimumReplicasUnavailable',
        'Deployment does not have minimum availability.',
        now,
      );
    }

    const complete =
      (next.updatedReplicas ?? 0) === replicas &&
      (next.replicas ?? 0) === replicas &&
      available === replicas &&
      (next.observedGeneration ?? 0) >= (d.metadata.generation ?? 1);
    const deadline = spec.progressDeadlineSeconds;
    if (trackProgress && newRS && deadline !== undefined) {
      const rsName = newRS.metadata.name;
      const progressing = next.conditions?.find((c) => c.type === 'Progressing');
      const alreadyComplete =
        next.replicas === next.updatedReplicas && progressing?.reason === 'NewReplicaSetAvailable';
      const oldReplicas = (s: DeploymentStatus) => (s.replicas ?? 0) - (s.updatedReplicas ?? 0);
      const progressed =
        (next.updatedReplicas ?? 0) > (previous.updatedReplicas ?? 0) ||
        oldReplicas(next) < oldReplicas(previous) ||
        (next.readyReplicas ?? 0) > (previous.readyReplicas ?? 0) ||
        available > (previous.availableReplicas ?? 0);
      if (!alreadyComplete) {
        if (complete) {
          setCondition(
            next,
            'Progressing',
            'True',
            'NewReplicaSetAvailable',
            `ReplicaSet "${rsName}" has successfully progressed.`,
            now,
          );
        } else if (progressed) {
          // Progress refreshes lastUpdateTime even with the same reason (upstream special-cases this).
          const cond: DeploymentCondition = {
            type: 'Progressing',
            status: 'True',
            lastUpdateTime: now,
            lastTransitionTime: progressing?.status === 'True' ? progressing.lastTransitionTime : now,
            reason: 'ReplicaSetUpdated',
            message: `ReplicaSet "${rsName}" is progressing.`,
          };
          next.conditions = [...(next.conditions ?? []).filter((c) => c.type !== 'Progressing'), cond];
        } else if (progressing && progressing.reason !== 'ProgressDeadlineExceeded') {
          const due = Date.parse(progressing.lastUpdateTime) + deadline * 1000;
          if (due <= this.ctx.now()) {
            setCondition(
              next,
              'Progressing',
              'False',
              'ProgressDeadlineExceeded',
              `ReplicaSet "${rsName}" has timed out progressing.`,
              now,
            );
          } else {
            this.queue.addAfter(
              `${d.metadata.namespace ?? ''}/${d.metadata.name}`,
              due - this.ctx.now() + 100,
            );
          }
        }
      }
    }
    if (trackProgress) copyReplicaFailure(next, all, newRS);
    omitZero(next, [
      'replicas',
      'updatedReplicas',
      'readyReplicas',
      'availableReplicas',
      'unavailableReplicas',
    ]);
    const current = store.get(types.deployments, d.metadata.namespace, d.metadata.name);
    if (current) store.replace(types.deployments, { ...current, status: next }, { subresource: 'status' });
    return complete;
  }
}

/**
 * syncRolloutStatus's getReplicaFailures: the new ReplicaSet's ReplicaFailure condition (an old one's when
 * the new has none) becomes the Deployment's (ReplicaSetToDeploymentCondition), and is removed when no
 * ReplicaSet has one. SetDeploymentCondition keeps a condition of the same status and reason as it is.
 */
function copyReplicaFailure(
  status: DeploymentStatus,
  all: KubeObject[],
  newRS: KubeObject | undefined,
): void {
  const failureOf = (rs: KubeObject | undefined) =>
    ((rs?.['status'] as { conditions?: unknown[] } | undefined)?.conditions ?? []).find(
      (c): c is ReplicaSetCondition => (c as { type?: unknown } | null)?.type === REPLICA_FAILURE,
    );
  const found = failureOf(newRS) ?? all.map(failureOf).find((c) => c !== undefined);
  if (!found) {
    if (status.conditions?.some((c) => c.type === REPLICA_FAILURE)) {
      status.conditions = status.conditions.filter((c) => c.type !== REPLICA_FAILURE);
    }
    return;
  }
  const current = status.conditions?.find((c) => c.type === REPLICA_FAILURE);
  if (current && current.status === found.status && current.reason === found.reason) return;
  const at = found.lastTransitionTime ?? '';
  const cond: DeploymentCondition = {
    type: REPLICA_FAILURE,
    status: found.status,
    lastUpdateTime: at,
    lastTransitionTime: at,
    reason: found.reason ?? '',
    message: found.message ?? '',
  };
  status.conditions = [...(status.conditions ?? []).filter((c) => c.type !== REPLICA_FAILURE), cond];
}

/** deploymentutil.SetDeploymentCondition: same status and reason is no change; same status keeps its transition time. */
function setCondition(
  status: DeploymentStatus,
  type: string,
  condStatus: 'True' | 'False',
  reason: string,
  message: string,
  now: string,
): void {
  const current = status.conditions?.find((c) => c.type === type);
  if (current && current.status === condStatus && current.reason === reason) return;
  const cond: DeploymentCondition = {
    type,
    status: condStatus,
    lastUpdateTime: now,
    lastTransitionTime: current && current.status === condStatus ? current.lastTransitionTime : now,
    reason,
    message,
  };
  status.conditions = [...(status.conditions ?? []).filter((c) => c.type !== type), cond];
}
