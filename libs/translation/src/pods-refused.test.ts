import { describe, expect, it } from '@jest/globals';
import type { CoreEvent } from '@opi/kube-objects';
import {
  STATEFULSET_REFUSAL_WINDOW_MS,
  type StatefulSetRefusal,
  statefulSetRefusal,
  summarizeStatefulSetRefusal,
} from './pods-refused.js';

const API =
  'pods "sts-1" is forbidden: exceeded quota: compute, requested: pods=1, used: pods=1, limited: pods=1';

function event(over: Partial<CoreEvent> = {}): CoreEvent {
  return {
    metadata: { name: 'sts.1', namespace: 'cf-workloads' },
    involvedObject: { kind: 'StatefulSet', namespace: 'cf-workloads', name: 'sts' },
    reason: 'FailedCreate',
    type: 'Warning',
    message: `create Pod sts-1 in StatefulSet sts failed error: ${API}`,
    count: 4,
    firstTimestamp: '2026-01-01T00:00:00Z',
    lastTimestamp: '2026-01-01T00:05:00Z',
    ...over,
  };
}

describe('summarizeStatefulSetRefusal', () => {
  it("keeps the API server's message and when it was last said", () => {
    expect(summarizeStatefulSetRefusal(event(), 9)).toEqual({
      namespace: 'cf-workloads',
      statefulSet: 'sts',
      message: API,
      atMs: Date.parse('2026-01-01T00:05:00Z'),
      rv: 9,
    });
  });

  it('holds nothing of other Events', () => {
    expect(summarizeStatefulSetRefusal(event({ reason: 'SuccessfulCreate' }), 1)).toBeUndefined();
    const pod = event({ involvedObject: { kind: 'Pod', name: 'sts-1' } });
    expect(summarizeStatefulSetRefusal(pod, 1)).toBeUndefined();
  });
});

describe('statefulSetRefusal', () => {
  const at = Date.parse('2026-01-01T00:05:00Z');
  const older: StatefulSetRefusal = {
    namespace: 'ns',
    statefulSet: 'sts',
    message: 'old',
    atMs: at - 60_000,
    rv: 1,
  };
  const latest: StatefulSetRefusal = { ...older, message: API, atMs: at, rv: 2 };
  const state: { pods: number; replicas: number; specChangedAtMs: number | undefined; nowMs: number } = {
    pods: 1,
    replicas: 3,
    specChangedAtMs: undefined,
    nowMs: at + 1000,
  };

  it.each<[string, Partial<typeof state>, string | undefined]>([
    ['the latest Event while pods are missing', {}, API],
    ['none once the pods exist up to the desired count', { pods: 3 }, undefined],
    ['none when said before the spec changed', { specChangedAtMs: at + 1000 }, undefined],
    ['the Event said in the second the spec changed', { specChangedAtMs: at + 400 }, API],
    [
      'none when not said again within the window',
      { nowMs: at + STATEFULSET_REFUSAL_WINDOW_MS + 1 },
      undefined,
    ],
  ])('%s', (_what, over, expected) => {
    expect(statefulSetRefusal([older, latest], { ...state, ...over })?.message).toBe(expected);
  });
});
