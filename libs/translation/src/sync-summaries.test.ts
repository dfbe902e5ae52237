import { describe, expect, it } from '@jest/globals';
import { crashReportsFor, reportedCrashesOf } from './crashes.js';
import { podToInstance } from './instances.js';
import type { Deployment, Pod } from './k8s-objects.js';
import { ANNOTATION_PROCESS_GUID, LABEL_GUID, LABEL_SOURCE_TYPE, LABEL_VERSION } from './labels.js';
import { GUID, VERSION } from './lrp.fixture.js';
import { appPod, deployment, lrp, pods, T0 } from './pod.fixture.js';
import { slimPod } from './slim.js';
import {
  type AppPodSummary,
  processGuidOfObject,
  summarizeDeployment,
  summarizeManagedPod,
} from './sync-summaries.js';

function withMetadata<T extends Deployment | Pod>(o: T, metadata: Partial<T['metadata']>): T {
  return { ...o, metadata: { ...o.metadata, ...metadata } };
}

function appSummary(pod: Pod): AppPodSummary {
  const s = summarizeManagedPod(pod);
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

describe('summarizeDeployment', () => {
  it('keeps its name, namespace, LRP and the two annotations the sync compares; nothing of the spec', () => {
    const s = summarizeDeployment(deployment);
    expect(s).toEqual({
      processGuid: lrp.processGuid,
      name: deployment.metadata.name,
      namespace: 'cf-workloads',
      generation: '7',
      lastUpdated: lrp.annotation,
    });
    expect(JSON.stringify(s).length).toBeLessThan(JSON.stringify(deployment).length / 10);
  });

  it('has the same keys with annotations missing (one shape for all), and no summary without an LRP', () => {
    const bare = withMetadata(deployment, { annotations: {} });
    const s = summarizeDeployment(bare);
    expect(Object.keys(s ?? {})).toEqual(Object.keys(summarizeDeployment(deployment) ?? {}));
    expect(s?.generation).toBeUndefined();
    expect(s?.lastUpdated).toBeUndefined();
    expect(summarizeDeployment(withMetadata(deployment, { annotations: {}, labels: {} }))).toBeUndefined();
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
      creationTimestamp: T0,
      state: info.state,
      sinceNs: info.sinceNs.toString(),
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
      if (due.reports.length === 0) {
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
    expect(summarizeManagedPod(withMetadata(running, { deletionTimestamp: T0 }))).toBeUndefined();
    const { [LABEL_VERSION]: _version, ...labels } = running.metadata.labels ?? {};
    expect(summarizeManagedPod(withMetadata(running, { labels }))).toBeUndefined();
  });

  it('keeps any other pod, terminating or not, slim for the Job pass', () => {
    const [, running] = pods[0] ?? ['', appPod({})];
    const taskPod = withMetadata(running, {
      labels: { ...running.metadata.labels, [LABEL_SOURCE_TYPE]: 'TASK', 'job-name': 'task-x' },
      deletionTimestamp: T0,
    });
    expect(summarizeManagedPod(taskPod)).toEqual({ kind: 'job', pod: slimPod(taskPod) });
  });
});
