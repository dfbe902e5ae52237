import { describe, expect, it } from '@jest/globals';
import type { PodIdentity } from './indexes.js';
import { assignIndexMap } from './indexes.js';

/** assignIndexMap over plain objects, for readable tables. */
const assignIndexes = (previous: Record<string, number>, pods: PodIdentity[]): Record<string, number> =>
  Object.fromEntries(assignIndexMap(new Map(Object.entries(previous)), pods));
const at = (name: string, second: number): PodIdentity => ({ name, createdS: 1_704_067_200 + second });

describe('assignIndexMap', () => {
  it.each<[string, Record<string, number>, PodIdentity[], Record<string, number>]>([
    ['no pods', {}, [], {}],
    ['first pods by creation time', {}, [at('c', 3), at('a', 1), at('b', 2)], { a: 0, b: 1, c: 2 }],
    ['same creation time: by name', {}, [at('b', 1), at('a', 1)], { a: 0, b: 1 }],
    ['no timestamp: after the others', {}, [{ name: 'a' }, at('z', 9)], { z: 0, a: 1 }],
    ['live pods keep their index', { a: 2, b: 0 }, [at('a', 1), at('b', 2)], { a: 2, b: 0 }],
    ['a gone pod frees its index', { a: 0, b: 1, c: 2 }, [at('a', 1), at('c', 3)], { a: 0, c: 2 }],
    [
      'a replacement takes the lowest free index',
      { a: 0, b: 1, c: 2 },
      [at('a', 1), at('c', 3), at('d', 9)],
      { a: 0, c: 2, d: 1 },
    ],
    [
      'several new pods fill the gaps in creation order',
      { b: 1, d: 3 },
      [at('b', 1), at('d', 2), at('y', 5), at('x', 4), at('z', 6)],
      { b: 1, d: 3, x: 0, y: 2, z: 4 },
    ],
    ['a duplicate index goes to the older pod', { a: 0, b: 0 }, [at('b', 2), at('a', 1)], { a: 0, b: 1 }],
    [
      'invalid indexes are reassigned',
      { a: -1, b: 1.5, c: 0 },
      [at('a', 1), at('b', 2), at('c', 3)],
      { c: 0, a: 1, b: 2 },
    ],
    ['a pod listed twice counts once', {}, [at('a', 1), at('a', 1), at('b', 2)], { a: 0, b: 1 }],
    [
      'inherited names are not indexes',
      {},
      [at('constructor', 1), at('toString', 2)],
      { constructor: 0, toString: 1 },
    ],
  ])('%s', (_what, previous, pods, expected) => {
    expect(assignIndexes(previous, pods)).toEqual(expected);
  });

  it('is stable across calls and independent of list order', () => {
    const pods = [at('a', 1), at('b', 2), at('c', 3)];
    const first = assignIndexes({}, pods);
    expect(assignIndexes(first, [...pods].reverse())).toEqual(first);
  });

  it("gives a StatefulSet pod its ordinal, before any other pod's earlier index", () => {
    const ord = (name: string, second: number, ordinal: number): PodIdentity => ({
      ...at(name, second),
      ordinal,
    });
    expect(assignIndexes({}, [ord('web-2', 1, 2), ord('web-0', 3, 0), ord('web-1', 2, 1)])).toEqual({
      'web-0': 0,
      'web-1': 1,
      'web-2': 2,
    });
    // An earlier assignment does not move it; a pod without an ordinal takes the lowest free index.
    expect(assignIndexes({ 'web-1': 0, stray: 1 }, [ord('web-1', 1, 1), at('stray', 2)])).toEqual({
      'web-1': 1,
      stray: 0,
    });
  });
});
