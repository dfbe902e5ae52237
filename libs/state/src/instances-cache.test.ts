import { describe, expect, it } from '@jest/globals';
import { type CachedInstance, presentInstances } from './instances-cache.js';

const row = (index: number, podName: string, ordinal = false): CachedInstance => ({
  index,
  podName,
  sinceNs: '1',
  state: 'RUNNING',
  ...(ordinal ? { ordinal: true as const } : {}),
});
const shown = (rows: CachedInstance[], desired: number): [number, string][] =>
  presentInstances(rows, desired).map((r) => [r.index, r.podName || r.state]);

describe('presentInstances', () => {
  it.each<[string, CachedInstance[], number, [number, string][]]>([
    [
      'all in range',
      [row(1, 'b'), row(0, 'a')],
      2,
      [
        [0, 'a'],
        [1, 'b'],
      ],
    ],
    [
      'a missing one is UNCLAIMED',
      [row(0, 'a')],
      2,
      [
        [0, 'a'],
        [1, 'UNCLAIMED'],
      ],
    ],
    ['after a scale-down to one, the pod left at 2 is shown at 0', [row(2, 'c')], 1, [[0, 'c']]],
    [
      'after a rolling update that left 0, 1 and 3 of 3, the fourth takes 2',
      [row(0, 'a'), row(1, 'b'), row(3, 'd')],
      3,
      [
        [0, 'a'],
        [1, 'b'],
        [2, 'd'],
      ],
    ],
    [
      'during a surge (more pods than desired) the extra keeps its index',
      [row(0, 'a'), row(1, 'b'), row(2, 'c'), row(3, 'd')],
      3,
      [
        [0, 'a'],
        [1, 'b'],
        [2, 'c'],
        [3, 'd'],
      ],
    ],
    [
      'high indexes fill the lowest free ones in their order',
      [row(5, 'f'), row(1, 'b'), row(4, 'e')],
      3,
      [
        [0, 'e'],
        [1, 'b'],
        [2, 'f'],
      ],
    ],
    [
      "a StatefulSet's ordinal never moves: the free index stays UNCLAIMED",
      [row(2, 'app-2', true)],
      1,
      [
        [0, 'UNCLAIMED'],
        [2, 'app-2'],
      ],
    ],
    ['nothing desired (stopped, still running)', [row(0, 'a')], 0, [[0, 'a']]],
  ])('%s', (_what, rows, desired, expected) => {
    expect(shown(rows, desired)).toEqual(expected);
  });
});

describe('a refused desire', () => {
  const refusal = 'environment variable name "MY VAR" is not allowed by this cluster: ...';
  it("is every desired instance's placement_error, over the scheduler's", () => {
    const rows = [{ ...row(0, 'a'), state: 'UNCLAIMED', placementError: 'Insufficient resources: memory' }];
    expect(presentInstances(rows, 2, refusal).map((r) => [r.index, r.state, r.placementError])).toEqual([
      [0, 'UNCLAIMED', refusal],
      [1, 'UNCLAIMED', refusal],
    ]);
  });

  it('is said on running instances of the older spec too, not on a surge beyond the desired count', () => {
    const rows = presentInstances([row(0, 'a'), row(1, 'b')], 1, refusal);
    expect(rows.map((r) => [r.index, r.state, r.placementError])).toEqual([
      [0, 'RUNNING', refusal],
      [1, 'RUNNING', undefined],
    ]);
  });

  it('leaves rows as they were without one', () => {
    expect(presentInstances([row(0, 'a')], 1)[0]).toEqual(row(0, 'a'));
  });
});

describe('presentInstances with pods the cluster refuses (decision 12)', () => {
  const why = 'Kubernetes could not create the app\'s instances: pods "web-" is forbidden: exceeded quota: q';

  it('says it on the unclaimed instances only', () => {
    const rows = presentInstances([row(0, 'a')], 3, undefined, why);
    expect(rows.map((r) => [r.index, r.state, r.placementError])).toEqual([
      [0, 'RUNNING', undefined],
      [1, 'UNCLAIMED', why],
      [2, 'UNCLAIMED', why],
    ]);
  });

  it('gives way to a refusal of the desire, which every instance says', () => {
    const rows = presentInstances([row(0, 'a')], 2, 'refused', why);
    expect(rows.map((r) => r.placementError)).toEqual(['refused', 'refused']);
  });
});
