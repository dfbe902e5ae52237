/** App pods in the states the sync tells apart, as the cluster stores them (managedFields and all). */
import { CRASHES_REPORTED_ANNOTATION } from './crashes.js';
import { lrpToDeployment } from './deployment.js';
import type { ContainerStatus, Deployment, Pod, PodStatus } from '@opi/kube-objects';
import { ANNOTATION_GENERATION } from './labels.js';
import { sampleLrp } from './lrp.fixture.js';

/** The status of a pod the scheduler could not place. */
export const UNSCHEDULABLE: PodStatus = {
  phase: 'Pending',
  conditions: [
    {
      type: 'PodScheduled',
      status: 'False',
      reason: 'Unschedulable',
      message: '0/3 nodes are available: 3 Insufficient memory.',
    },
  ],
};

export const T0 = '2020-05-11T15:52:25Z';
export const lrp = sampleLrp();
export const deployment: Deployment = {
  ...lrpToDeployment(lrp, { runAsNonRoot: true }),
};
deployment.metadata.annotations = { ...deployment.metadata.annotations, [ANNOTATION_GENERATION]: '7' };
const template = deployment.spec?.template;

export function appPod(status: PodStatus, annotations: Record<string, string> = {}): Pod {
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

export const opi = (s: Partial<ContainerStatus>): ContainerStatus => ({
  name: 'opi',
  ready: false,
  restartCount: 0,
  image: lrp.image,
  imageID: '',
  ...s,
});

export const pods: [string, Pod][] = [
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
  ['unschedulable', appPod(UNSCHEDULABLE)],
];
