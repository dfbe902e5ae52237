/**
 * The StatefulSet controller, after upstream's stateful_set_control.go: pods `<sts>-<ordinal>` with stable
 * names (a deleted pod comes back under the same name), OrderedReady or Parallel management, scale-down
 * from the highest ordinal, rolling updates from the highest ordinal down to the partition (one pod at a
 * time, or up to maxUnavailable with the MaxUnavailableStatefulSet gate, see BehaviourConfig), revisions
 * as ControllerRevisions, and claims from volumeClaimTemplates.
 */
import { StatusError } from '../errors.js';
import type { KubeObject, LabelSelector } from '../types.js';
import type { Context } from './context.js';
import { templateHash } from './hash.js';
import {
  controllerOf,
  isAvailable,
  isRunningAndReady,
  isTerminal,
  msUntilAvailable,
  omitZero,
  ownerRef,
  splitKey,
} from './pods.js';
import { KeyedController } from './queue.js';
import { type ReplicaSetSpec, ownedPods, podFromTemplate } from './replicaset.js';

const SOURCE = { component: 'statefulset-controller' };
const REVISION_LABEL = 'controller-revision-hash';
const POD_NAME_LABEL = 'statefulset.kubernetes.io/pod-name';
const POD_INDEX_LABEL = 'apps.kubernetes.io/pod-index';
const HASH_LABEL = 'controller.kubernetes.io/hash';

type Template = ReplicaSetSpec['template'];

interface ClaimTemplate {
  metadata?: { name?: string; labels?: Record<string, string>; annotations?: Record<string, string> };
  spec?: { accessModes?: string[]; resources?: { requests?: Record<string, string> }; [k: string]: unknown };
}

interface StatefulSetSpec {
  replicas?: number;
  selector?: LabelSelector;
  template?: Template;
  serviceName?: string;
  podManagementPolicy?: 'OrderedReady' | 'Parallel';
  updateStrategy?: {
    type?: 'RollingUpdate' | 'OnDelete';
    rollingUpdate?: { partition?: number; maxUnavailable?: number | string };
  };
  revisionHistoryLimit?: number;
  minReadySeconds?: number;
  volumeClaimTemplates?: ClaimTemplate[];
}

interface StatefulSetStatus {
  observedGeneration?: number;
  replicas: number;
  readyReplicas?: number;
  currentReplicas?: number;
  updatedReplicas?: number;
  currentRevision?: string;
  updateRevision?: string;
  collisionCount?: number;
  availableReplicas: number;
}

export class StatefulSetController extends KeyedController {
  constructor(private readonly ctx: Context) {
    super('statefulset', ctx.timers);
  }

  protected sync(k: string): void {
    const { store, types } = this.ctx;
    const { namespace, name } = splitKey(k);
    const sts = store.get(types.statefulsets, namespace, name);
    if (!sts || sts.metadata.deletionTimestamp) return;
    const spec = (sts['spec'] ?? {}) as StatefulSetSpec;
    const previous = (sts['status'] ?? {}) as Partial<StatefulSetStatus>;

    const revisions = this.revisions(sts);
    const updateRev = this.ensureRevision(sts, spec, revisions, previous.updateRevision);
    const updateName = updateRev.metadata.name;
    const currentRev =
      (previous.currentRevision && revisions.find((r) => r.metadata.name === previous.currentRevision)) ||
      updateRev;
    const currentName = currentRev.metadata.name;

    const byOrdinal = new Map<number, KubeObject>();
    const prefix = `${sts.metadata.name}-`;
    const owned = ownedPods(this.ctx, sts);
    for (const p of owned) {
      const ord = p.metadata.name.startsWith(prefix) ? Number(p.metadata.name.slice(prefix.length)) : NaN;
      if (Number.isInteger(ord) && ord >= 0) byOrdinal.set(ord, p);
    }
    const replicas = spec.replicas ?? 1;
    const ordered = spec.podManagementPolicy !== 'Parallel';
    const rolling = (spec.updateStrategy?.type ?? 'RollingUpdate') === 'RollingUpdate';
    const partition = rolling ? (spec.updateStrategy?.rollingUpdate?.partition ?? 0) : 0;

    let blocked = false;
    for (let i = 0; i < replicas && !blocked; i++) {
      const p = byOrdinal.get(i);
      if (!p) {
        const useCurrent = rolling && i < partition;
        this.createPod(sts, spec, i, useCurrent ? currentRev : updateRev);
        blocked = ordered;
      } else if (p.metadata.deletionTimestamp) {
        blocked = ordered;
      } else if (isTerminal(p)) {
        // A failed or finished pod is replaced under the same name.
        this.deletePod(sts, p);
        blocked = ordered;
      } else if (ordered && !isRunningAndReady(p)) {
        blocked = true;
      }
    }

    if (!blocked) {
      const condemned = [...byOrdinal.entries()].filter(([ord]) => ord >= replicas).sort(([a], [b]) => b - a);
      for (const [, p] of condemned) {
        if (!p.metadata.deletionTimestamp) this.deletePod(sts, p);
        if (ordered) {
          blocked = true;
          break;
        }
      }
    }

    if (!blocked && rolling) {
      const outdated = (p: KubeObject): boolean =>
        p.metadata.labels?.[REVISION_LABEL] !== updateName && !p.metadata.deletionTimestamp;
      if (this.ctx.behaviour.maxUnavailableStatefulSet) {
        // updateStatefulSetAfterInvariantEstablished: every unavailable pod counts against maxUnavailable,
        // an old-revision one too, so old pods that never become ready block their own replacement.
        const max = maxUnavailableOf(spec.updateStrategy?.rollingUpdate?.maxUnavailable, replicas);
        let unavailable = 0;
        for (let i = 0; i < replicas; i++) {
          const p = byOrdinal.get(i);
          if (!p || p.metadata.deletionTimestamp || !isRunningAndReady(p)) unavailable++;
        }
        let budget = max - unavailable;
        for (let i = replicas - 1; i >= partition && budget > 0; i--) {
          const p = byOrdinal.get(i);
          if (p && outdated(p)) {
            this.deletePod(sts, p);
            budget--;
          }
        }
      } else {
        for (let i = replicas - 1; i >= partition; i--) {
          const p = byOrdinal.get(i);
          if (!p) break;
          if (outdated(p)) {
            this.deletePod(sts, p);
            break;
          }
          // Upstream's isHealthy: running, ready and not terminating.
          if (!isRunningAndReady(p) || p.metadata.deletionTimestamp) break;
        }
      }
    }

    this.writeStatus(k, sts, spec, currentName, updateName);
    this.cleanupRevisions(sts, spec, currentName, updateName);
  }

  private revisions(sts: KubeObject): KubeObject[] {
    const out: KubeObject[] = [];
    for (const { resource, object } of this.ctx.store.dependentsOf(sts.metadata.uid)) {
      if (resource === this.ctx.types.controllerrevisions && controllerOf(object)?.uid === sts.metadata.uid)
        out.push(object);
    }
    return out;
  }

  /** The ControllerRevision of the current template; an older one rolled back to becomes the newest again. */
  private ensureRevision(
    sts: KubeObject,
    spec: StatefulSetSpec,
    revisions: KubeObject[],
    currentUpdateRevision: string | undefined,
  ): KubeObject {
    const { store, types } = this.ctx;
    const hash = templateHash(spec.template);
    const name = `${sts.metadata.name}-${hash}`;
    const maxRevision = Math.max(0, ...revisions.map(revisionNumber));
    const existing = revisions.find((r) => r.metadata.name === name);
    if (existing) {
      if (revisionNumber(existing) < maxRevision && currentUpdateRevision !== name) {
        const next = structuredClone(existing);
        next['revision'] = maxRevision + 1;
        return store.replace(types.controllerrevisions, next);
      }
      return existing;
    }
    return store.create(types.controllerrevisions, {
      apiVersion: 'apps/v1',
      kind: 'ControllerRevision',
      metadata: {
        name,
        namespace: sts.metadata.namespace ?? '',
        uid: '',
        resourceVersion: '',
        creationTimestamp: '',
        labels: { ...(spec.template?.metadata?.labels ?? {}), [HASH_LABEL]: hash },
        ownerReferences: [ownerRef(sts)],
      },
      data: { spec: { template: { ...structuredClone(spec.template ?? {}), $patch: 'replace' } } },
      revision: maxRevision + 1,
    });
  }

  private templateOf(revision: KubeObject, spec: StatefulSetSpec): Template {
    const data = revision['data'] as { spec?: { template?: Template & { $patch?: string } } } | undefined;
    const stored = data?.spec?.template;
    if (!stored) return spec.template;
    const copy = structuredClone(stored);
    delete copy.$patch;
    return copy;
  }

  private createPod(sts: KubeObject, spec: StatefulSetSpec, ordinal: number, revision: KubeObject): void {
    const { store, types } = this.ctx;
    const podName = `${sts.metadata.name}-${ordinal}`;
    const pod = podFromTemplate(sts, this.templateOf(revision, spec), podName, undefined);
    pod.metadata.labels = {
      ...(pod.metadata.labels ?? {}),
      [REVISION_LABEL]: revision.metadata.name,
      [POD_NAME_LABEL]: podName,
      [POD_INDEX_LABEL]: String(ordinal),
    };
    const podSpec = (pod['spec'] ?? {}) as Record<string, unknown>;
    podSpec['hostname'] = podName;
    if (spec.serviceName) podSpec['subdomain'] = spec.serviceName;
    const claims = this.ensureClaims(sts, spec, podName);
    if (claims.length) {
      const volumes = Array.isArray(podSpec['volumes']) ? (podSpec['volumes'] as { name?: string }[]) : [];
      const names = new Set(claims.map((c) => c.volume));
      podSpec['volumes'] = [
        ...claims.map((c) => ({ name: c.volume, persistentVolumeClaim: { claimName: c.claim } })),
        ...volumes.filter((v) => !names.has(v.name ?? '')),
      ];
    }
    try {
      store.create(types.pods, pod);
    } catch (err) {
      // A pod of that name that is not ours (yet): wait for it to go, as upstream does.
      if (err instanceof StatusError && err.code === 409) {
        this.queue.addAfter(`${sts.metadata.namespace ?? ''}/${sts.metadata.name}`, 1000);
        return;
      }
      // stateful_pod_control.go recordPodEvent; the sync ends with the error (no status update, as
      // upstream's updateStatefulSet returns it) and the queue retries with back-off.
      if (err instanceof StatusError) {
        this.ctx.recorder.record(
          sts,
          'Warning',
          'FailedCreate',
          `create Pod ${podName} in StatefulSet ${sts.metadata.name} failed error: ${err.message}`,
          SOURCE,
        );
      }
      throw err;
    }
    this.ctx.recorder.record(
      sts,
      'Normal',
      'SuccessfulCreate',
      `create Pod ${podName} in StatefulSet ${sts.metadata.name} successful`,
      SOURCE,
    );
  }

  /** The claims of volumeClaimTemplates (`<template>-<pod>`), created Bound since no provisioner runs here. */
  private ensureClaims(
    sts: KubeObject,
    spec: StatefulSetSpec,
    podName: string,
  ): { volume: string; claim: string }[] {
    const out: { volume: string; claim: string }[] = [];
    const pvcs = this.ctx.store.registry.get('', 'persistentvolumeclaims');
    for (const t of spec.volumeClaimTemplates ?? []) {
      const volume = t.metadata?.name;
      if (!volume) continue;
      const claim = `${volume}-${podName}`;
      out.push({ volume, claim });
      if (this.ctx.store.get(pvcs, sts.metadata.namespace, claim)) continue;
      const created = this.ctx.store.create(pvcs, {
        apiVersion: 'v1',
        kind: 'PersistentVolumeClaim',
        metadata: {
          name: claim,
          namespace: sts.metadata.namespace ?? '',
          uid: '',
          resourceVersion: '',
          creationTimestamp: '',
          labels: { ...(spec.selector?.matchLabels ?? {}), ...(t.metadata?.labels ?? {}) },
          ...(t.metadata?.annotations ? { annotations: t.metadata.annotations } : {}),
        },
        spec: { volumeMode: 'Filesystem', ...structuredClone(t.spec ?? {}) },
      });
      const bound = structuredClone(created);
      bound['status'] = {
        phase: 'Bound',
        accessModes: t.spec?.accessModes ?? ['ReadWriteOnce'],
        capacity: { storage: t.spec?.resources?.requests?.['storage'] ?? '1Gi' },
      };
      this.ctx.store.replace(pvcs, bound, { subresource: 'status' });
    }
    return out;
  }

  private deletePod(sts: KubeObject, pod: KubeObject): void {
    this.ctx.store.delete(this.ctx.types.pods, pod.metadata.namespace, pod.metadata.name, {
      preconditions: { uid: pod.metadata.uid },
    });
    this.ctx.recorder.record(
      sts,
      'Normal',
      'SuccessfulDelete',
      `delete Pod ${pod.metadata.name} in StatefulSet ${sts.metadata.name} successful`,
      SOURCE,
    );
  }

  private writeStatus(
    k: string,
    sts: KubeObject,
    spec: StatefulSetSpec,
    currentName: string,
    updateName: string,
  ): void {
    const { store, types } = this.ctx;
    const now = this.ctx.now();
    const minReady = spec.minReadySeconds ?? 0;
    const pods = ownedPods(this.ctx, sts);
    let soonest = Infinity;
    const status: StatefulSetStatus = {
      observedGeneration: sts.metadata.generation ?? 1,
      replicas: pods.length,
      readyReplicas: pods.filter(isRunningAndReady).length,
      currentReplicas: pods.filter(
        (p) => !p.metadata.deletionTimestamp && p.metadata.labels?.[REVISION_LABEL] === currentName,
      ).length,
      updatedReplicas: pods.filter(
        (p) => !p.metadata.deletionTimestamp && p.metadata.labels?.[REVISION_LABEL] === updateName,
      ).length,
      currentRevision: currentName,
      updateRevision: updateName,
      collisionCount: 0,
      availableReplicas: pods.filter((p) => {
        if (!isRunningAndReady(p)) return false;
        const ok = isAvailable(p, minReady, now);
        if (!ok) soonest = Math.min(soonest, msUntilAvailable(p, minReady, now));
        return ok;
      }).length,
    };
    // completeRollingUpdate: once every pod runs the update revision, it becomes the current one.
    const rolling = (spec.updateStrategy?.type ?? 'RollingUpdate') === 'RollingUpdate';
    if (rolling && status.updatedReplicas === status.replicas && status.readyReplicas === status.replicas) {
      status.currentReplicas = status.updatedReplicas;
      status.currentRevision = updateName;
    }
    omitZero(status, ['readyReplicas', 'currentReplicas', 'updatedReplicas']);
    const current = store.get(types.statefulsets, sts.metadata.namespace, sts.metadata.name);
    if (current) store.replace(types.statefulsets, { ...current, status }, { subresource: 'status' });
    if (Number.isFinite(soonest)) this.queue.addAfter(k, soonest + 50);
  }

  /** Keeps revisionHistoryLimit revisions besides the current and update ones. */
  private cleanupRevisions(
    sts: KubeObject,
    spec: StatefulSetSpec,
    currentName: string,
    updateName: string,
  ): void {
    const limit = spec.revisionHistoryLimit ?? 10;
    const live = new Set([currentName, updateName]);
    for (const p of ownedPods(this.ctx, sts)) {
      const rev = p.metadata.labels?.[REVISION_LABEL];
      if (rev) live.add(rev);
    }
    const history = this.revisions(sts)
      .filter((r) => !live.has(r.metadata.name))
      .sort((a, b) => revisionNumber(a) - revisionNumber(b));
    for (let i = 0; i < history.length - limit; i++) {
      const r = history[i] as KubeObject;
      this.ctx.store.delete(this.ctx.types.controllerrevisions, r.metadata.namespace, r.metadata.name);
    }
  }
}

/** rollingUpdate.maxUnavailable as upstream scales it: a count, or a percentage rounded down; at least 1. */
export function maxUnavailableOf(value: number | string | undefined, replicas: number): number {
  let n = 1;
  if (typeof value === 'number') n = value;
  else if (typeof value === 'string' && /^\d+%$/.test(value))
    n = Math.floor((replicas * parseInt(value, 10)) / 100);
  else if (typeof value === 'string' && /^\d+$/.test(value)) n = Number(value);
  return Math.max(1, n);
}

function revisionNumber(r: KubeObject): number {
  return typeof r['revision'] === 'number' ? r['revision'] : 0;
}
