import { describe, expect, it } from '@jest/globals';
import type { InstanceInfo, InstanceState } from '@opi/domain';
import { instanceStateOf, placementErrorOf, podToInstance, sinceNsOf } from './instances.js';
import type { ContainerState, ContainerStatus, Pod, PodCondition, PodPhase } from '@opi/kube-objects';

const T0 = '2020-05-11T15:52:25Z';
const T0_NS = 1589212345_000_000_000n;
const T1 = '2020-05-11T15:53:00Z';
const T1_NS = 1589212380_000_000_000n;

const scheduled: PodCondition = { type: 'PodScheduled', status: 'True' };
const unschedulable = (message: string): PodCondition => ({
  type: 'PodScheduled',
  status: 'False',
  reason: 'Unschedulable',
  message,
  lastProbeTime: null,
});

function status(state: ContainerState, extra: Partial<ContainerStatus> = {}): ContainerStatus {
  return { name: 'opi', ready: false, restartCount: 0, image: 'img', imageID: '', state, ...extra };
}
const running = (ready: boolean, startedAt = T1) => status({ running: { startedAt } }, { ready });
const waiting = (reason: string, message?: string) =>
  status({ waiting: { reason, ...(message ? { message } : {}) } });
const terminated = (exitCode: number) =>
  status({ terminated: { exitCode, reason: exitCode ? 'Error' : 'Completed' } });

function pod(
  phase: PodPhase | undefined,
  opts: {
    node?: string;
    conditions?: PodCondition[];
    containers?: ContainerStatus[];
    init?: ContainerStatus[];
  } = {},
): Pod {
  return {
    metadata: { name: 'app-dev-0123456789-abcde-fghij', creationTimestamp: T0 },
    spec: { containers: [{ name: 'opi' }], ...(opts.node ? { nodeName: opts.node } : {}) },
    status: {
      ...(phase ? { phase } : {}),
      ...(opts.conditions ? { conditions: opts.conditions } : {}),
      ...(opts.containers ? { containerStatuses: opts.containers } : {}),
      ...(opts.init ? { initContainerStatuses: opts.init } : {}),
      startTime: T0,
    },
  };
}
const onNode = { node: 'node-1', conditions: [scheduled] };

describe('instanceStateOf', () => {
  it.each<[string, Pod, InstanceState]>([
    ['just created, no status', { metadata: { name: 'p' } }, 'UNCLAIMED'],
    ['pending, not scheduled', pod('Pending'), 'UNCLAIMED'],
    [
      'pending, unschedulable',
      pod('Pending', { conditions: [unschedulable('0/1 nodes are available')] }),
      'UNCLAIMED',
    ],
    [
      'pending, on a node, image pulling',
      pod('Pending', { ...onNode, containers: [waiting('ContainerCreating')] }),
      'CLAIMED',
    ],
    ['scheduled by condition only', pod('Pending', { conditions: [scheduled] }), 'CLAIMED'],
    ['scheduled by nodeName only', pod('Pending', { node: 'n' }), 'CLAIMED'],
    ['running, not ready', pod('Running', { ...onNode, containers: [running(false)] }), 'CLAIMED'],
    ['running and ready', pod('Running', { ...onNode, containers: [running(true)] }), 'RUNNING'],
    ['running, no container statuses yet', pod('Running', onNode), 'CLAIMED'],
    [
      'running, one of two containers ready',
      {
        ...pod('Running', { ...onNode, containers: [running(true)] }),
        spec: { nodeName: 'n', containers: [{ name: 'opi' }, { name: 'side' }] },
      },
      'CLAIMED',
    ],
    [
      'running, exited 0 and not restarted yet',
      pod('Running', { ...onNode, containers: [terminated(0)] }),
      'CLAIMED',
    ],
    ...[
      'CrashLoopBackOff',
      'ErrImagePull',
      'ImagePullBackOff',
      'InvalidImageName',
      'CreateContainerError',
      'CreateContainerConfigError',
      'RunContainerError',
    ].map((reason): [string, Pod, InstanceState] => [
      `waiting in ${reason}`,
      pod('Pending', { ...onNode, containers: [waiting(reason)] }),
      'CRASHED',
    ]),
    [
      'running, crash-looping',
      pod('Running', { ...onNode, containers: [waiting('CrashLoopBackOff')] }),
      'CRASHED',
    ],
    ['terminated with an error', pod('Running', { ...onNode, containers: [terminated(1)] }), 'CRASHED'],
    [
      'an init container crash-looping',
      pod('Pending', { ...onNode, init: [waiting('CrashLoopBackOff')] }),
      'CRASHED',
    ],
    ['pod Failed', pod('Failed', onNode), 'CRASHED'],
    ['pod Failed (evicted, not scheduled any more)', pod('Failed'), 'CRASHED'],
    ['pod Unknown (node lost)', pod('Unknown', onNode), 'UNKNOWN'],
    ['pod Succeeded', pod('Succeeded', onNode), 'UNKNOWN'],
    ['running but not scheduled (inconsistent)', pod('Running'), 'UNKNOWN'],
  ])('%s → %s', (_what, p, expected) => {
    expect(instanceStateOf(p)).toBe(expected);
  });
});

describe('placementErrorOf', () => {
  it.each<[string, string]>([
    ['0/3 nodes are available: 3 Insufficient memory.', 'Insufficient resources: memory'],
    ['0/3 nodes are available: 3 Insufficient cpu.', 'Insufficient resources: cpu'],
    [
      '0/3 nodes are available: 1 Insufficient memory, 2 Insufficient cpu.',
      'Insufficient resources: cpu, memory',
    ],
    [
      '0/3 nodes are available: 3 Insufficient memory. preemption: 0/3 nodes are available: 3 No preemption victims found for incoming pod.',
      'Insufficient resources: memory',
    ],
    [
      "0/1 nodes are available: 1 node(s) didn't match Pod's node affinity/selector.",
      "0/1 nodes are available: 1 node(s) didn't match Pod's node affinity/selector.",
    ],
    [
      '0/2 nodes are available: 2 Insufficient ephemeral-storage.',
      '0/2 nodes are available: 2 Insufficient ephemeral-storage.',
    ],
  ])('%j → %j', (message, expected) => {
    expect(placementErrorOf(message)).toBe(expected);
  });
});

describe('sinceNsOf', () => {
  it.each<[string, Pod, bigint]>([
    [
      'the running container start',
      pod('Running', { ...onNode, containers: [running(true, '2020-05-11T15:53:00.5Z')] }),
      T1_NS + 500_000_000n,
    ],
    ['else the pod start', pod('Pending', { ...onNode, containers: [waiting('ContainerCreating')] }), T0_NS],
    ['else 0', { metadata: { name: 'p' } }, 0n],
    [
      'the app container, not a sidecar',
      pod('Running', {
        ...onNode,
        containers: [{ ...running(true, '2021-01-01T00:00:00Z'), name: 'side' }, running(true)],
      }),
      T1_NS,
    ],
  ])('%s', (_what, p, expected) => {
    expect(sinceNsOf(p)).toBe(expected);
  });
});

describe('podToInstance', () => {
  const name = 'app-dev-0123456789-abcde-fghij';
  it.each<[string, Pod, number, InstanceInfo]>([
    [
      'a running instance',
      pod('Running', { ...onNode, containers: [running(true)] }),
      2,
      { index: 2, sinceNs: T1_NS, state: 'RUNNING', podName: name },
    ],
    [
      'an unschedulable instance, in Diego words',
      pod('Pending', { conditions: [unschedulable('0/3 nodes are available: 3 Insufficient memory.')] }),
      0,
      {
        index: 0,
        sinceNs: T0_NS,
        state: 'UNCLAIMED',
        placementError: 'Insufficient resources: memory',
        podName: name,
      },
    ],
    [
      'an unschedulable instance, message kept',
      pod('Pending', {
        conditions: [unschedulable('0/1 nodes are available: 1 node(s) had untolerated taint.')],
      }),
      1,
      {
        index: 1,
        sinceNs: T0_NS,
        state: 'UNCLAIMED',
        placementError: '0/1 nodes are available: 1 node(s) had untolerated taint.',
        podName: name,
      },
    ],
    [
      'not scheduled yet, no error',
      pod('Pending', { conditions: [{ type: 'PodScheduled', status: 'False', reason: 'SchedulingGated' }] }),
      0,
      { index: 0, sinceNs: T0_NS, state: 'UNCLAIMED', podName: name },
    ],
    [
      'a crashed instance',
      pod('Running', { ...onNode, containers: [waiting('CrashLoopBackOff')] }),
      4,
      { index: 4, sinceNs: T0_NS, state: 'CRASHED', podName: name },
    ],
  ])('%s', (_what, p, index, expected) => {
    expect(podToInstance(p, index)).toEqual(expected);
  });
});
