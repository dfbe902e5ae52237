import { describe, expect, it } from '@jest/globals';
import type { Pod, StatefulSet } from '@opi/kube-objects';
import { REVISION_LABEL, type RolloutStep, rolloutStep } from './rollout.js';

const UID = 'sts-uid';
const sts = (status: StatefulSet['status'], generation = 2): StatefulSet => ({
  metadata: { name: 'app', uid: UID, generation },
  ...(status ? { status } : {}),
});
const rolling = { observedGeneration: 2, currentRevision: 'app-old', updateRevision: 'app-new' };

function pod(
  name: string,
  revision: string,
  state: 'ready' | 'crashing' | 'starting' | 'terminating',
  owner = UID,
): Pod {
  const running = state === 'ready' || state === 'terminating';
  return {
    metadata: {
      name,
      labels: { [REVISION_LABEL]: revision },
      ownerReferences: [
        { apiVersion: 'apps/v1', kind: 'StatefulSet', name: 'app', uid: owner, controller: true },
      ],
      ...(state === 'terminating' ? { deletionTimestamp: '2026-12-02T00:00:00Z' } : {}),
    },
    spec: { containers: [{ name: 'opi', image: 'i' }] },
    status: {
      phase: state === 'starting' ? 'Pending' : 'Running',
      containerStatuses: [
        {
          name: 'opi',
          ready: running,
          restartCount: state === 'crashing' ? 4 : 0,
          image: 'i',
          imageID: '',
          state: running
            ? { running: { startedAt: '2026-12-02T00:00:00Z' } }
            : { waiting: { reason: state === 'crashing' ? 'CrashLoopBackOff' : 'ContainerCreating' } },
        },
      ],
    },
  };
}

describe('rolloutStep', () => {
  it.each<[string, StatefulSet, Pod[], RolloutStep]>([
    ['no status yet', sts(undefined), [pod('app-0', 'app-old', 'crashing')], { state: 'not-observed' }],
    [
      'a status of the generation before',
      sts({ ...rolling, observedGeneration: 1 }),
      [pod('app-0', 'app-old', 'crashing')],
      { state: 'not-observed' },
    ],
    [
      'every pod new',
      sts(rolling),
      [pod('app-0', 'app-new', 'ready'), pod('app-1', 'app-new', 'crashing')],
      { state: 'rolled-out' },
    ],
    [
      'old pods crash-looping and starting: both removed; a ready one left to the controller',
      sts(rolling),
      [
        pod('app-0', 'app-old', 'ready'),
        pod('app-1', 'app-old', 'crashing'),
        pod('app-2', 'app-old', 'starting'),
        pod('app-3', 'app-new', 'crashing'),
      ],
      { state: 'rolling', remove: ['app-1', 'app-2'], waiting: 1 },
    ],
    [
      'a terminating old pod is already on its way',
      sts(rolling),
      [pod('app-0', 'app-old', 'terminating'), pod('app-1', 'app-new', 'ready')],
      { state: 'rolled-out' },
    ],
    [
      "another workload's pod of the same LRP is not this rollout's",
      sts(rolling),
      [pod('app-0', 'app-new', 'ready'), pod('app-5d8f-x', 'other', 'crashing', 'deployment-uid')],
      { state: 'rolled-out' },
    ],
  ])('%s', (_what, s, pods, expected) => {
    expect(rolloutStep(s, pods)).toEqual(expected);
  });
});
