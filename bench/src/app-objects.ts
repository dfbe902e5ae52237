/**
 * An LRP's objects as the cluster would hold them once its controllers and a kubelet wrote them, for the
 * bench to seed and change without running either. What a projection keeps depends on these details
 * (names, annotations, timestamps), so they follow what a real cluster writes.
 */
import { createHash } from 'node:crypto';
import type { DesiredLrp, WorkloadKind } from '@opi/domain';
import type { Simulator } from '@opi/kube-sim';
import {
  ANNOTATION_GENERATION,
  APP_CONTAINER,
  labelsFor,
  lrpToDeployment,
  lrpToStatefulSet,
  podAnnotationsFor,
  POD_INDEX_LABEL,
  REVISION_LABEL,
  workloadName,
} from '@opi/translation';

/** The LRP's Deployment as converged to its record's `generation`. */
export function deploymentAt(lrp: DesiredLrp, generation: number): Record<string, unknown> {
  const d = lrpToDeployment(lrp, { runAsNonRoot: true });
  d.metadata.annotations = { ...d.metadata.annotations, [ANNOTATION_GENERATION]: String(generation) };
  return d as unknown as Record<string, unknown>;
}

/** The LRP's StatefulSet as converged to its record's `generation` (index variables on). */
export function statefulSetAt(lrp: DesiredLrp, generation: number): Record<string, unknown> {
  const s = lrpToStatefulSet(lrp, { runAsNonRoot: true, instanceIndexEnv: true });
  s.metadata.annotations = { ...s.metadata.annotations, [ANNOTATION_GENERATION]: String(generation) };
  return s as unknown as Record<string, unknown>;
}

/** A pod's name as the kind's controller gives it: a ReplicaSet's (below), or `<statefulset>-<ordinal>`. */
export function podNameFor(kind: WorkloadKind, lrp: DesiredLrp, k: number): string {
  return kind === 'deployment' ? podName(lrp, k) : `${workloadName(lrp)}-${k}`;
}

/**
 * As a ReplicaSet names its pods (the memory held per pod grows with its name): its own name (the
 * Deployment's and the pod-template-hash) cut to 58 characters, then 5 random ones.
 */
export function podName(lrp: DesiredLrp, k: number): string {
  const hex = (s: string): string => createHash('sha1').update(s).digest('hex');
  return (
    `${workloadName(lrp)}-${hex(lrp.processGuid).slice(0, 10)}-`.slice(0, 58) +
    hex(`${lrp.processGuid}/${k}`).slice(0, 5)
  );
}

/** A time as a kubelet's status carries it (metav1.Time: whole seconds; a real server drops a fraction). */
export function seconds(d: Date): string {
  return d.toISOString().replace(/\.\d{3}Z$/, 'Z');
}

export function podBody(lrp: DesiredLrp, name: string, namespace: string): Record<string, unknown> {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    // As its ReplicaSet makes it: the template's labels and annotations.
    metadata: { name, namespace, labels: labelsFor(lrp), annotations: podAnnotationsFor(lrp) },
    spec: { containers: [{ name: APP_CONTAINER, image: lrp.image }], nodeName: 'bench-node-1' },
  };
}

/**
 * The LRP's Deployment and its running pods straight into the simulated cluster's store (the HTTP path
 * would take minutes at 100k); each pod's status through its subresource, as the kubelet writes it.
 */
export function storeLrp(
  sim: Simulator,
  lrp: DesiredLrp,
  generation: number,
  pods: readonly string[],
  namespace: string,
  startedAt: string,
  workload: WorkloadKind = 'deployment',
): void {
  const store = sim.store;
  if (workload === 'deployment') {
    store.create(store.registry.get('apps', 'deployments'), deploymentAt(lrp, generation) as never);
  }
  // A StatefulSet's pods are its own (controller reference, ordinal labels), as its controller makes them.
  const owner =
    workload === 'statefulset'
      ? store.create(store.registry.get('apps', 'statefulsets'), statefulSetAt(lrp, generation) as never)
      : undefined;
  const kind = store.registry.get('', 'pods');
  pods.forEach((name, ordinal) => {
    const body = podBody(lrp, name, namespace) as { metadata: Record<string, unknown> };
    if (owner) {
      const labels = body.metadata['labels'] as Record<string, string>;
      body.metadata['labels'] = {
        ...labels,
        [POD_INDEX_LABEL]: String(ordinal),
        [REVISION_LABEL]: `${owner.metadata.name}-1`,
      };
      body.metadata['ownerReferences'] = [
        {
          apiVersion: 'apps/v1',
          kind: 'StatefulSet',
          name: owner.metadata.name,
          uid: owner.metadata.uid,
          controller: true,
          blockOwnerDeletion: true,
        },
      ];
    }
    const pod = store.create(kind, body as never);
    store.replace(kind, { ...pod, status: runningStatus(lrp, startedAt) }, { subresource: 'status' });
  });
}

/** What a kubelet reports of a running app container; a crash adds the previous run's termination. */
export function runningStatus(
  lrp: DesiredLrp,
  startedAt: string,
  crash?: { restarts: number; finishedAt: string },
): Record<string, unknown> {
  return {
    phase: 'Running',
    startTime: startedAt,
    containerStatuses: [
      {
        name: APP_CONTAINER,
        ready: true,
        restartCount: crash?.restarts ?? 0,
        image: lrp.image,
        imageID: '',
        state: { running: { startedAt: crash?.finishedAt ?? startedAt } },
        ...(crash
          ? {
              lastState: {
                terminated: {
                  exitCode: 1,
                  reason: 'Error',
                  startedAt,
                  finishedAt: crash.finishedAt,
                },
              },
            }
          : {}),
      },
    ],
  };
}
