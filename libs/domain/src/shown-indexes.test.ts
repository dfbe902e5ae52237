import { describe, expect, it } from '@jest/globals';
import { type IndexedInstance, shownIndexes } from './shown-indexes.js';

const rows = (...indexes: (number | `${number}o`)[]): IndexedInstance[] =>
  indexes.map((i) =>
    typeof i === 'number' ? { index: i } : { index: Number(i.slice(0, -1)), ordinal: true },
  );

describe('shownIndexes', () => {
  it.each<[string, IndexedInstance[], number, number[]]>([
    ['all in range', rows(1, 0), 2, [1, 0]],
    ['after a scale-down, the high index takes the free low one', rows(2, 1), 2, [0, 1]],
    ['several move, in the order of their own indexes', rows(5, 0, 3), 3, [2, 0, 1]],
    ['more rows than desired: the extra one keeps its index', rows(0, 1, 2), 2, [0, 1, 2]],
    ['an ordinal never moves', rows('3o', 1), 2, [3, 1]],
    ['nothing desired (stopped): nothing moves', rows(0, 1), 0, [0, 1]],
    ['no rows', [], 3, []],
  ])('%s', (_, given, desired, expected) => {
    expect(shownIndexes(given, desired)).toEqual(expected);
  });
});
