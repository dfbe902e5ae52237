/**
 * applyMergePatch against RFC 7386's appendix A and Kubernetes-shaped objects: inputs untouched, nothing
 * shared with the result, a __proto__ key kept as data.
 */
import { describe, expect, it } from '@jest/globals';
import { applyMergePatch } from './patch.js';
import { copy, deepFreeze } from './patch.fixture.js';
import type { Json } from './types.js';

describe('applyMergePatch (RFC 7386 appendix A)', () => {
  it.each<[Json, Json, Json]>([
    [{ a: 'b' }, { a: 'c' }, { a: 'c' }],
    [{ a: 'b' }, { b: 'c' }, { a: 'b', b: 'c' }],
    [{ a: 'b' }, { a: null }, {}],
    [{ a: 'b', b: 'c' }, { a: null }, { b: 'c' }],
    [{ a: ['b'] }, { a: 'c' }, { a: 'c' }],
    [{ a: 'c' }, { a: ['b'] }, { a: ['b'] }],
    [{ a: { b: 'c' } }, { a: { b: 'd', c: null } }, { a: { b: 'd' } }],
    [{ a: [{ b: 'c' }] }, { a: [1] }, { a: [1] }],
    [
      ['a', 'b'],
      ['c', 'd'],
      ['c', 'd'],
    ],
    [{ a: 'b' }, ['c'], ['c']],
    [{ a: 'foo' }, null, null],
    [{ a: 'foo' }, 'bar', 'bar'],
    [{ e: null }, { a: 1 }, { e: null, a: 1 }],
    [[1, 2], { a: 'b', c: null }, { a: 'b' }],
    [{}, { a: { bb: { ccc: null } } }, { a: { bb: {} } }],
    // Kubernetes-shaped: arrays replace whole, nested maps merge.
    [
      { spec: { replicas: 1, template: { spec: { containers: [{ name: 'a' }, { name: 'b' }] } } } },
      { spec: { replicas: 3, template: { spec: { containers: [{ name: 'c' }] } } } },
      { spec: { replicas: 3, template: { spec: { containers: [{ name: 'c' }] } } } },
    ],
  ])('%j + %j → %j', (target, patch, expected) => {
    const before = copy(target);
    expect(applyMergePatch(deepFreeze(target), deepFreeze(patch))).toEqual(expected);
    expect(target).toEqual(before);
  });

  it('returns values that share nothing with its inputs', () => {
    const target: Json = { keep: { x: 1 }, list: [{ y: 1 }] };
    const patch: Json = { added: { z: 1 } };
    const out = applyMergePatch(target, patch) as { keep: { x: number }; added: { z: number } };
    out.keep.x = 2;
    out.added.z = 2;
    expect(target).toEqual({ keep: { x: 1 }, list: [{ y: 1 }] });
    expect(patch).toEqual({ added: { z: 1 } });
  });

  it('keeps a __proto__ key as data', () => {
    const patch = JSON.parse('{"__proto__": {"polluted": true}}') as Json;
    const out = applyMergePatch({}, patch) as Record<string, unknown>;
    expect(Object.getPrototypeOf(out)).toBe(Object.prototype);
    expect(Object.keys(out)).toEqual(['__proto__']);
  });
});
