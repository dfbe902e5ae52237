/**
 * applyJsonPatch (RFC 6902): each op applied without touching its inputs, and bodies or ops the API server
 * refuses answered with its code, reason and message, the target left alone when a later op fails.
 */
import { describe, expect, it } from '@jest/globals';
import { applyJsonPatch } from './patch.js';
import { copy, deepFreeze, thrown } from './patch.fixture.js';
import type { Json } from './types.js';

describe('applyJsonPatch', () => {
  const doc: Json = { metadata: { labels: { a: '1' } }, spec: { replicas: 1, list: [1, 2] } };

  it.each<[string, Json, Json]>([
    [
      'replace',
      [{ op: 'replace', path: '/spec/replicas', value: 3 }],
      { metadata: { labels: { a: '1' } }, spec: { replicas: 3, list: [1, 2] } },
    ],
    [
      'add a map key and an array element',
      [
        { op: 'add', path: '/metadata/labels/b', value: '2' },
        { op: 'add', path: '/spec/list/-', value: 3 },
      ],
      { metadata: { labels: { a: '1', b: '2' } }, spec: { replicas: 1, list: [1, 2, 3] } },
    ],
    [
      'remove',
      [{ op: 'remove', path: '/metadata/labels/a' }],
      { metadata: { labels: {} }, spec: { replicas: 1, list: [1, 2] } },
    ],
    [
      'test then replace',
      [
        { op: 'test', path: '/metadata/labels/a', value: '1' },
        { op: 'replace', path: '/metadata/labels/a', value: '2' },
      ],
      { metadata: { labels: { a: '2' } }, spec: { replicas: 1, list: [1, 2] } },
    ],
    [
      'move',
      [{ op: 'move', from: '/spec/replicas', path: '/spec/count' }],
      { metadata: { labels: { a: '1' } }, spec: { count: 1, list: [1, 2] } },
    ],
    ['empty patch', [], doc],
  ])('%s', (_name, ops, expected) => {
    const before = copy(doc);
    expect(applyJsonPatch(deepFreeze(doc), deepFreeze(ops))).toEqual(expected);
    expect(doc).toEqual(before);
  });

  it('does not share op values with the result', () => {
    const ops: Json = [{ op: 'add', path: '/x', value: { y: 1 } }];
    const out = applyJsonPatch({}, ops) as { x: { y: number } };
    out.x.y = 2;
    expect(ops).toEqual([{ op: 'add', path: '/x', value: { y: 1 } }]);
  });

  it.each<[string, unknown, number, string, string]>([
    [
      'an object (client-node 1.x default content type)',
      { spec: { replicas: 3 } },
      400,
      'BadRequest',
      'json: cannot unmarshal object into Go value of type jsonpatch.Patch',
    ],
    [
      'a string element',
      ['x'],
      400,
      'BadRequest',
      'json: cannot unmarshal string into Go value of type jsonpatch.Operation',
    ],
    [
      'a failed test',
      [{ op: 'test', path: '/spec/replicas', value: 2 }],
      422,
      'Invalid',
      'Test operation failed',
    ],
    [
      'a missing path',
      [{ op: 'replace', path: '/spec/nope', value: 1 }],
      422,
      'Invalid',
      'Cannot perform the operation at a path that does not exist',
    ],
    [
      'an unknown op',
      [{ op: 'frobnicate', path: '/spec' }],
      422,
      'Invalid',
      'Operation `op` property is not one of operations defined in RFC-6902',
    ],
  ])('rejects %s', (_name, ops, code, reason, message) => {
    const err = thrown(() => applyJsonPatch(doc, ops));
    expect({ code: err.code, reason: err.reason, message: err.message }).toEqual({ code, reason, message });
  });

  it('leaves the target alone when a later op fails, and names the op', () => {
    const target: Json = { a: 1 };
    const err = thrown(() =>
      applyJsonPatch(target, [
        { op: 'replace', path: '/a', value: 2 },
        { op: 'test', path: '/a', value: 3 },
      ]),
    );
    expect(target).toEqual({ a: 1 });
    expect(err.details?.causes).toEqual([
      { reason: 'FieldValueInvalid', field: 'patch[1]', message: 'Test operation failed' },
    ]);
  });
});
