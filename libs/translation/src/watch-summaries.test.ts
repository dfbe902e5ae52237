import { describe, expect, it } from '@jest/globals';
import { crashReportsFor, reportedCrashesOf } from './crashes.js';
import { podToInstance } from './instances.js';
import type { Deployment, Pod } from '@opi/kube-objects';
import {
  ANNOTATION_GENERATION,
  ANNOTATION_PROCESS_GUID,
  LABEL_GUID,
  LABEL_SOURCE_TYPE,
  LABEL_VERSION,
} from './labels.js';
import { GUID, VERSION } from './lrp.fixture.js';
import { appPod, deployment, lrp, pods, T0 } from './pod.fixture.js';
import { slimPod } from './slim.js';
import { lrpToStatefulSet } from './statefulset.js';
import {
  type AppPodSummary,
  processGuidOfObject,
  summarizeWorkload,
  ordinalOf,
  summarizeManagedPod,
} from './watch-summaries.js';

function withMetadata<T extends Deployment | Pod>(o: T, metadata: Partial<T['metadata']>): T {
  return { ...o, metadata: { ...o.metadata, ...metadata } };
}

function appSummary(pod: Pod): AppPodSummary {
  const s = summarizeManagedPod(pod, 4);
  if (s?.kind !== 'app') throw new Error(`not an app pod summary: ${JSON.stringify(s)}`);
  return s;
}

describe('processGuidOfObject', () => {
  const { [ANNOTATION_PROCESS_GUID]: _dropped, ...otherAnnotations } = deployment.metadata.annotations ?? {};
  it.each<[string, Deployment | Pod, string | undefined]>([
    ['the annotation', deployment, lrp.processGuid],
    [
      'the annotation before the labels',
      withMetadata(deployment, { annotations: { [ANNOTATION_PROCESS_GUID]: 'pg-annotated' } }),
      'pg-annotated',
    ],
    [
      'the guid and version labels',
      withMetadata(deployment, { annotations: otherAnnotations }),
      lrp.processGuid,
    ],
    ["a pod's labels", appPod({}), `${GUID}-${VERSION}`],
    [
      'nothing with neither',
      withMetadata(deployment, { annotations: {}, labels: { [LABEL_GUID]: GUID } }),
      undefined,
    ],
  ])('reads %s', (_name, o, expected) => {
    expect(processGuidOfObject(o)).toBe(expected);
  });
});

describe('summarizeWorkload', () => {
  it('keeps its name, namespace, LRP, the generation the sync compares and its version; nothing of the spec', () => {
    const s = summarizeWorkload('deployment', deployment, 4);
    expect(s).toEqual({
      kind: 'deployment',
      processGuid: lrp.processGuid,
      name: deployment.metadata.name,
      namespace: 'cf-workloads',
      generation: 7,
      specGeneration: undefined,
      rv: 4,
    });
    expect(JSON.stringify(s).length).toBeLessThan(JSON.stringify(deployment).length / 10);
  });

  it("carries a Deployment's pods refused while its ReplicaFailure condition is True", () => {
    const message = 'pods "web-5d8c7b-92pml" is forbidden: exceeded quota: compute';
    const failing = {
      ...deployment,
      status: {
        conditions: [{ type: 'ReplicaFailure', status: 'True' as const, reason: 'FailedCreate', message }],
      },
    };
    expect(summarizeWorkload('deployment', failing, 4)?.podsRefused).toBe(message);
    const cleared = {
      ...deployment,
      status: { conditions: [{ type: 'Available', status: 'True' as const }] },
    };
    expect(summarizeWorkload('deployment', cleared, 4)).not.toHaveProperty('podsRefused');
  });

  it('summarises a StatefulSet the same way, naming its kind and the revision it rolls out', () => {
    const sts = lrpToStatefulSet(lrp, { runAsNonRoot: true, instanceIndexEnv: true });
    sts.metadata.annotations = { ...sts.metadata.annotations, [ANNOTATION_GENERATION]: '7' };
    sts.metadata.namespace = 'cf-workloads';
    sts.metadata.generation = 2;
    sts.status = { observedGeneration: 2, updateRevision: 'app-abc' };
    expect(summarizeWorkload('statefulset', sts, 5)).toEqual({
      kind: 'statefulset',
      processGuid: lrp.processGuid,
      name: sts.metadata.name,
      namespace: 'cf-workloads',
      generation: 7,
      specGeneration: 2,
      updateRevision: 'app-abc',
      replicas: 3,
      rv: 5,
    });
    // Its controller has not seen the spec yet: no revision to compare pods with.
    sts.metadata.generation = 3;
    expect(summarizeWorkload('statefulset', sts, 6)?.updateRevision).toBeUndefined();
  });

  it('has the same keys with annotations missing (one shape for all), and no summary without an LRP', () => {
    const bare = withMetadata(deployment, { annotations: {} });
    const s = summarizeWorkload('deployment', bare, 4);
    expect(Object.keys(s ?? {})).toEqual(Object.keys(summarizeWorkload('deployment', deployment, 4) ?? {}));
    expect(s?.generation).toBeUndefined();
    const generation = (g: string): number | undefined =>
      summarizeWorkload(
        'deployment',
        withMetadata(deployment, { annotations: { [ANNOTATION_GENERATION]: g } }),
        4,
      )?.generation;
    expect(generation('1796148895949000')).toBe(1796148895949000);
    expect(generation('7x')).toBeUndefined();
    expect(generation('99999999999999999999')).toBeUndefined();
    expect(
      summarizeWorkload('deployment', withMetadata(deployment, { annotations: {}, labels: {} }), 4),
    ).toBeUndefined();
  });
});

describe('summarizeManagedPod', () => {
  it.each(pods)('%s: the instance the cache shows, from a flat summary', (_name, full) => {
    const s = appSummary(full);
    const info = podToInstance(full, 0);
    expect(s).toMatchObject({
      kind: 'app',
      processGuid: lrp.processGuid,
      name: full.metadata.name,
      createdS: Date.parse(T0) / 1000,
      state: info.state,
      since: Number(info.sinceNs / 1_000_000_000n),
      placementError: info.placementError,
    });
    // Whole seconds, never before the pod's creation.
    expect(Number.isInteger(s.changedAtS)).toBe(true);
    expect(s.changedAtS).toBeGreaterThanOrEqual(Date.parse(T0) / 1000);
  });

  it.each(pods)(
    '%s: keeps the pod only while it has crashes to report, and they are the same',
    (_n, full) => {
      const s = appSummary(full);
      const due = crashReportsFor(full, lrp.processGuid, 3, reportedCrashesOf(full));
      if (due.length === 0) {
        expect(s.unreported).toBeUndefined();
        return;
      }
      const kept = s.unreported;
      if (!kept) throw new Error('a pod with crashes to report was not kept');
      expect(crashReportsFor(kept, lrp.processGuid, 3, reportedCrashesOf(kept))).toEqual(due);
    },
  );

  it('gives every app pod the same keys in the same order (one hidden class for 100,000 of them)', () => {
    const shapes = new Set(pods.map(([, p]) => Object.keys(appSummary(p)).join()));
    expect(shapes.size).toBe(1);
  });

  it('drops a terminating app pod (its replacement is the instance) and an app pod naming no LRP', () => {
    const [, running] = pods[0] ?? ['', appPod({})];
    expect(summarizeManagedPod(withMetadata(running, { deletionTimestamp: T0 }), 4)).toBeUndefined();
    const { [LABEL_VERSION]: _version, ...labels } = running.metadata.labels ?? {};
    expect(summarizeManagedPod(withMetadata(running, { labels }), 4)).toBeUndefined();
  });

  it('keeps any other pod, terminating or not, slim for the Job pass', () => {
    const [, running] = pods[0] ?? ['', appPod({})];
    const taskPod = withMetadata(running, {
      labels: { ...running.metadata.labels, [LABEL_SOURCE_TYPE]: 'TASK', 'job-name': 'task-x' },
      deletionTimestamp: T0,
    });
    expect(summarizeManagedPod(taskPod, 4)).toEqual({ kind: 'job', pod: slimPod(taskPod), rv: 4 });
  });
});

describe('ordinalOf', () => {
  const owned = (kind: string, name: string, labels: Record<string, string> = {}): Pod => {
    const p = appPod({ phase: 'Running' });
    return withMetadata(p, {
      name,
      labels: { ...p.metadata.labels, ...labels },
      ownerReferences: [{ apiVersion: 'apps/v1', kind, name: 'web', uid: 'o1', controller: true }],
    });
  };
  it.each<[string, Pod, number | undefined]>([
    [
      'the pod-index label of a StatefulSet pod',
      owned('StatefulSet', 'web-7', { 'apps.kubernetes.io/pod-index': '3' }),
      3,
    ],
    [
      "its name's number where the label is not set (before Kubernetes 1.28)",
      owned('StatefulSet', 'web-12'),
      12,
    ],
    ['nothing for a ReplicaSet pod', owned('ReplicaSet', 'web-6d4cf56db6-x2x7b'), undefined],
    ['nothing for a pod without an owner', appPod({ phase: 'Running' }), undefined],
    [
      'nothing for a label that is not a number',
      owned('StatefulSet', 'web-x', { 'apps.kubernetes.io/pod-index': 'x' }),
      undefined,
    ],
  ])('%s', (_what, pod, expected) => {
    expect(ordinalOf(pod)).toBe(expected);
    expect(appSummary(pod).ordinal).toBe(expected);
  });

  it("keeps the revision of a StatefulSet pod that is not running; a Deployment's pod has no such key", () => {
    const sts = owned('StatefulSet', 'web-1', { 'controller-revision-hash': 'web-5c8f' });
    expect(appSummary(sts).state).not.toBe('RUNNING');
    expect(appSummary(sts).revision).toBe('web-5c8f');
    const running = { ...sts, status: pods[0]![1].status };
    expect(appSummary(running).state).toBe('RUNNING');
    expect(appSummary(running).revision).toBeUndefined();
    expect('revision' in appSummary(owned('ReplicaSet', 'web-6d4cf56db6-x2x7b'))).toBe(false);
  });
});
