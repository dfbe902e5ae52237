import { describe, expect, it } from '@jest/globals';
import { crashReportsFor, reportedCrashesOf, CRASHES_REPORTED_ANNOTATION } from './crashes.js';
import { lrpToDeployment } from './deployment.js';
import { podToInstance } from './instances.js';
import { taskOutcome } from './job-outcome.js';
import { sampleTask } from './job.fixture.js';
import type { ContainerStatus, Deployment, Pod, PodStatus } from './k8s-objects.js';
import {
  ANNOTATION_GENERATION,
  ANNOTATION_LAST_UPDATED,
  ANNOTATION_PROCESS_GUID,
  LABEL_GUID,
  LABEL_MANAGED_BY,
  LABEL_SOURCE_TYPE,
  LABEL_VERSION,
} from './labels.js';
import { sampleLrp } from './lrp.fixture.js';
import { slimDeployment, slimPod } from './slim.js';
import { taskToJob } from './task-job.js';

const T0 = '2020-05-11T15:52:25Z';
const lrp = sampleLrp();
const deployment: Deployment = {
  ...lrpToDeployment(lrp, { runAsNonRoot: true }),
};
deployment.metadata.annotations = { ...deployment.metadata.annotations, [ANNOTATION_GENERATION]: '7' };
const template = deployment.spec?.template;

function appPod(status: PodStatus, annotations: Record<string, string> = {}): Pod {
  return {
    metadata: {
      name: 'app-dev-0123456789-abcde',
      namespace: 'cf-workloads',
      uid: 'u1',
      resourceVersion: '42',
      creationTimestamp: T0,
      labels: template?.metadata?.labels ?? {},
      annotations,
      ...({ managedFields: [{ manager: 'kubelet', fieldsV1: { 'f:status': {} } }] } as object),
    },
    spec: { ...(template?.spec ?? { containers: [] }), nodeName: 'node-1' },
    status,
  };
}

const opi = (s: Partial<ContainerStatus>): ContainerStatus => ({
  name: 'opi',
  ready: false,
  restartCount: 0,
  image: lrp.image,
  imageID: '',
  ...s,
});

const pods: [string, Pod][] = [
  [
    'running and ready',
    appPod({
      phase: 'Running',
      startTime: T0,
      containerStatuses: [opi({ ready: true, state: { running: { startedAt: T0 } } })],
    }),
  ],
  [
    'crash-looping, two crashes reported of five',
    appPod(
      {
        phase: 'Running',
        startTime: T0,
        containerStatuses: [
          opi({
            restartCount: 5,
            state: { waiting: { reason: 'CrashLoopBackOff' } },
            lastState: { terminated: { exitCode: 1, reason: 'Error', finishedAt: T0 } },
          }),
        ],
      },
      { [CRASHES_REPORTED_ANNOTATION]: '2' },
    ),
  ],
  [
    'unschedulable',
    appPod({
      phase: 'Pending',
      conditions: [
        {
          type: 'PodScheduled',
          status: 'False',
          reason: 'Unschedulable',
          message: '0/3 nodes are available: 3 Insufficient memory.',
        },
      ],
    }),
  ],
];

describe('slimPod', () => {
  it.each(pods)('%s: the same instance and crash reports, from far fewer bytes', (_name, full) => {
    const slim = slimPod(full);
    expect(podToInstance(slim, 2)).toEqual(podToInstance(full, 2));
    expect(reportedCrashesOf(slim)).toBe(reportedCrashesOf(full));
    expect(crashReportsFor(slim, lrp.processGuid, 2, reportedCrashesOf(slim))).toEqual(
      crashReportsFor(full, lrp.processGuid, 2, reportedCrashesOf(full)),
    );
    expect(slim.metadata).not.toHaveProperty('managedFields');
    expect(slim.metadata.resourceVersion).toBe('42');
    expect(slim.metadata.labels).toEqual({
      [LABEL_GUID]: full.metadata.labels?.[LABEL_GUID],
      [LABEL_VERSION]: full.metadata.labels?.[LABEL_VERSION],
      [LABEL_SOURCE_TYPE]: full.metadata.labels?.[LABEL_SOURCE_TYPE],
      [LABEL_MANAGED_BY]: full.metadata.labels?.[LABEL_MANAGED_BY],
    });
    expect(JSON.stringify(slim).length).toBeLessThan(JSON.stringify(full).length / 2);
  });

  it("keeps what a task's outcome is read from (termination message, exit code)", () => {
    const job = taskToJob(sampleTask(), { runAsNonRoot: true });
    const failed: Pod = {
      metadata: { name: 'task-pod', labels: job.spec.template.metadata?.labels ?? {} },
      spec: job.spec.template.spec,
      status: {
        phase: 'Failed',
        containerStatuses: [
          opi({
            state: { terminated: { exitCode: 3, reason: 'Error', message: 'boom' } },
          }),
        ],
      },
    };
    const finished = { ...job, status: { failed: 1 } };
    expect(taskOutcome(finished, [slimPod(failed)])).toEqual(taskOutcome(finished, [failed]));
    const withJobName = { ...failed, metadata: { ...failed.metadata, labels: { 'job-name': 'task-x' } } };
    expect(slimPod(withJobName).metadata.labels).toEqual({ 'job-name': 'task-x' });
    expect(taskOutcome(finished, [failed])).toBeDefined();
  });
});

describe('slimDeployment', () => {
  it("keeps identity, its LRP's labels and the annotations the sync compares; drops the spec and the desired LRP", () => {
    const slim = slimDeployment({ ...deployment, metadata: { ...deployment.metadata, uid: 'd1' } });
    expect(slim.metadata.name).toBe(deployment.metadata.name);
    expect(slim.metadata.uid).toBe('d1');
    expect(slim.metadata.labels).toEqual({
      [LABEL_GUID]: deployment.metadata.labels?.[LABEL_GUID],
      [LABEL_VERSION]: deployment.metadata.labels?.[LABEL_VERSION],
    });
    expect(slim.metadata.annotations).toEqual({
      [ANNOTATION_PROCESS_GUID]: lrp.processGuid,
      [ANNOTATION_LAST_UPDATED]: lrp.annotation,
      [ANNOTATION_GENERATION]: '7',
    });
    expect(slim.spec).toBeUndefined();
    expect(JSON.stringify(slim).length).toBeLessThan(JSON.stringify(deployment).length / 5);
  });
});
