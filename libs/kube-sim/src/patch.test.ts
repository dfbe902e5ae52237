import { describe, expect, it } from '@jest/globals';
import { StatusError } from './errors.js';
import type { PatchType } from './patch.js';
import {
  applyJsonPatch,
  applyMergePatch,
  applyStrategicMergePatch,
  parseApplyBody,
  patchTypeFromContentType,
} from './patch.js';
import type { Json } from './types.js';

function thrown(fn: () => unknown): StatusError {
  try {
    fn();
  } catch (err) {
    if (err instanceof StatusError) return err;
    throw err;
  }
  throw new Error('expected a StatusError');
}

/** Frozen inputs make any in-place write throw (ESM code is strict), so passing tests prove no mutation. */
function deepFreeze<T>(value: T): T {
  if (typeof value === 'object' && value !== null) {
    for (const v of Object.values(value)) deepFreeze(v);
    Object.freeze(value);
  }
  return value;
}

function copy(value: Json): Json {
  return JSON.parse(JSON.stringify(value)) as Json;
}

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

const pod = (containers: Json, extra: Record<string, Json> = {}): Json => ({
  spec: { containers, ...extra },
});

describe('applyStrategicMergePatch', () => {
  it.each<[string, Json, Json, Json]>([
    [
      'containers merge by name',
      pod([
        { name: 'a', image: 'a:1' },
        { name: 'b', image: 'b:1', args: ['x'] },
      ]),
      pod([{ name: 'b', image: 'b:2' }]),
      pod([
        { name: 'a', image: 'a:1' },
        { name: 'b', image: 'b:2', args: ['x'] },
      ]),
    ],
    [
      'a new container is appended',
      pod([{ name: 'a', image: 'a:1' }]),
      pod([{ name: 'c', image: 'c:1' }]),
      pod([
        { name: 'a', image: 'a:1' },
        { name: 'c', image: 'c:1' },
      ]),
    ],
    [
      'env merges by name inside a container; unknown lists (args) replace',
      pod([
        {
          name: 'a',
          args: ['1', '2'],
          env: [
            { name: 'X', value: '1' },
            { name: 'Y', value: '1' },
          ],
        },
      ]),
      pod([
        {
          name: 'a',
          args: ['3'],
          env: [
            { name: 'Y', value: '2' },
            { name: 'Z', value: '3' },
          ],
        },
      ]),
      pod([
        {
          name: 'a',
          args: ['3'],
          env: [
            { name: 'X', value: '1' },
            { name: 'Y', value: '2' },
            { name: 'Z', value: '3' },
          ],
        },
      ]),
    ],
    [
      '$patch: delete removes a keyed element',
      pod([{ name: 'a' }, { name: 'b' }]),
      pod([{ name: 'a', $patch: 'delete' }]),
      pod([{ name: 'b' }]),
    ],
    [
      '$patch: replace in a list replaces it with the other elements',
      pod([{ name: 'a', image: 'a:1' }, { name: 'b' }]),
      pod([{ name: 'c' }, { $patch: 'replace' }]),
      pod([{ name: 'c' }]),
    ],
    [
      '$patch: replace in a map replaces the map',
      { metadata: { labels: { a: '1', b: '2' } } },
      { metadata: { labels: { $patch: 'replace', c: '3' } } },
      { metadata: { labels: { c: '3' } } },
    ],
    [
      '$patch: delete in a map deletes the map',
      { metadata: { name: 'x', annotations: { a: '1' } } },
      { metadata: { annotations: { $patch: 'delete' } } },
      { metadata: { name: 'x' } },
    ],
    [
      'null deletes a key; scalars replace',
      { metadata: { labels: { a: '1', b: '2' } }, spec: { replicas: 1 } },
      { metadata: { labels: { a: null } }, spec: { replicas: 2 } },
      { metadata: { labels: { b: '2' } }, spec: { replicas: 2 } },
    ],
    [
      'finalizers merge as a set',
      { metadata: { finalizers: ['a', 'b'] } },
      { metadata: { finalizers: ['b', 'c'] } },
      { metadata: { finalizers: ['a', 'b', 'c'] } },
    ],
    [
      '$deleteFromPrimitiveList removes finalizers',
      { metadata: { finalizers: ['a', 'b', 'c'] } },
      { metadata: { '$deleteFromPrimitiveList/finalizers': ['a', 'c'] } },
      { metadata: { finalizers: ['b'] } },
    ],
    [
      'conditions merge by type',
      {
        status: {
          conditions: [
            { type: 'Ready', status: 'False' },
            { type: 'Initialized', status: 'True' },
          ],
        },
      },
      { status: { conditions: [{ type: 'Ready', status: 'True', reason: 'Up' }] } },
      {
        status: {
          conditions: [
            { type: 'Ready', status: 'True', reason: 'Up' },
            { type: 'Initialized', status: 'True' },
          ],
        },
      },
    ],
    [
      'ownerReferences merge by uid',
      { metadata: { ownerReferences: [{ uid: 'u1', name: 'a', controller: true }] } },
      {
        metadata: {
          ownerReferences: [
            { uid: 'u1', blockOwnerDeletion: true },
            { uid: 'u2', name: 'b' },
          ],
        },
      },
      {
        metadata: {
          ownerReferences: [
            { uid: 'u1', name: 'a', controller: true, blockOwnerDeletion: true },
            { uid: 'u2', name: 'b' },
          ],
        },
      },
    ],
    [
      'volumeMounts merge by mountPath',
      pod([{ name: 'a', volumeMounts: [{ mountPath: '/data', name: 'v1' }] }]),
      pod([
        {
          name: 'a',
          volumeMounts: [
            { mountPath: '/data', readOnly: true },
            { mountPath: '/tmp', name: 't' },
          ],
        },
      ]),
      pod([
        {
          name: 'a',
          volumeMounts: [
            { mountPath: '/data', name: 'v1', readOnly: true },
            { mountPath: '/tmp', name: 't' },
          ],
        },
      ]),
    ],
    [
      'container ports merge by containerPort',
      pod([{ name: 'a', ports: [{ containerPort: 80, name: 'http' }] }]),
      pod([{ name: 'a', ports: [{ containerPort: 80, protocol: 'TCP' }, { containerPort: 81 }] }]),
      pod([
        { name: 'a', ports: [{ containerPort: 80, name: 'http', protocol: 'TCP' }, { containerPort: 81 }] },
      ]),
    ],
    [
      'Service ports merge by port',
      { spec: { ports: [{ port: 80, targetPort: 8080 }] } },
      { spec: { ports: [{ port: 80, targetPort: 9090 }, { port: 443 }] } },
      { spec: { ports: [{ port: 80, targetPort: 9090 }, { port: 443 }] } },
    ],
    [
      'volumes and imagePullSecrets merge by name; $retainKeys clears the old volume source',
      pod([], {
        volumes: [
          { name: 'v', emptyDir: {} },
          { name: 'w', emptyDir: {} },
        ],
        imagePullSecrets: [{ name: 'r1' }],
      }),
      pod([], {
        volumes: [{ name: 'v', configMap: { name: 'cm' }, $retainKeys: ['configMap', 'name'] }],
        imagePullSecrets: [{ name: 'r2' }],
      }),
      pod([], {
        volumes: [
          { name: 'v', configMap: { name: 'cm' } },
          { name: 'w', emptyDir: {} },
        ],
        imagePullSecrets: [{ name: 'r1' }, { name: 'r2' }],
      }),
    ],
    [
      '$retainKeys on a map drops unlisted fields',
      { spec: { strategy: { type: 'RollingUpdate', rollingUpdate: { maxSurge: 1 } } } },
      { spec: { strategy: { $retainKeys: ['type'], type: 'Recreate' } } },
      { spec: { strategy: { type: 'Recreate' } } },
    ],
    [
      '$setElementOrder is stripped',
      pod([{ name: 'a', image: 'a:1' }, { name: 'b' }]),
      {
        spec: {
          '$setElementOrder/containers': [{ name: 'b' }, { name: 'a' }],
          containers: [{ name: 'a', image: 'a:2' }],
        },
      },
      pod([{ name: 'a', image: 'a:2' }, { name: 'b' }]),
    ],
    [
      'directives in a list the target lacks are applied, not copied',
      { spec: {} },
      pod([
        { name: 'a', $patch: 'delete' },
        { name: 'b', image: null },
      ]),
      pod([{ name: 'b' }]),
    ],
    [
      'ephemeralContainers and initContainers merge by name',
      {
        spec: {
          initContainers: [{ name: 'i', image: '1' }],
          ephemeralContainers: [{ name: 'e', image: '1' }],
        },
      },
      { spec: { initContainers: [{ name: 'i', image: '2' }], ephemeralContainers: [{ name: 'f' }] } },
      {
        spec: {
          initContainers: [{ name: 'i', image: '2' }],
          ephemeralContainers: [{ name: 'e', image: '1' }, { name: 'f' }],
        },
      },
    ],
    ['a non-object target is replaced by the patch', 'x', { a: { b: null, c: 1 } }, { a: { c: 1 } }],
    ['top-level $patch: delete leaves an empty object', { a: 1 }, { $patch: 'delete' }, {}],
  ])('%s', (_name, target, patch, expected) => {
    const before = copy(target);
    expect(applyStrategicMergePatch(deepFreeze(target), deepFreeze(patch))).toEqual(expected);
    expect(target).toEqual(before);
  });

  it.each<[string, Json, Json, string]>([
    ['a non-object patch', {}, [{ op: 'add' }], 'invalid JSON document'],
    [
      'a keyed element without its key',
      pod([{ name: 'a' }]),
      pod([{ image: 'x' }]),
      'map: {"image":"x"} does not contain declared merge key: name',
    ],
    [
      'an unknown $patch in a map',
      { a: {} },
      { a: { $patch: 'merge' } },
      'unknown patch type: "merge" in map: {"$patch":"merge"}',
    ],
    [
      'an unknown $patch in a list',
      pod([{ name: 'a' }]),
      pod([{ name: 'a', $patch: 'nope' }]),
      'unknown patch type: "nope" in map: {"name":"a","$patch":"nope"}',
    ],
    [
      'a patched key missing from $retainKeys',
      { a: 1 },
      { $retainKeys: ['a'], b: 2 },
      'invalid patch format of retainKeys',
    ],
    [
      'a non-list $deleteFromPrimitiveList',
      { metadata: { finalizers: ['a'] } },
      { metadata: { '$deleteFromPrimitiveList/finalizers': 'a' } },
      'invalid patch format of primitive list',
    ],
  ])('rejects %s with a 400', (_name, target, patch, message) => {
    const err = thrown(() => applyStrategicMergePatch(target, patch));
    expect({ code: err.code, reason: err.reason, message: err.message }).toEqual({
      code: 400,
      reason: 'BadRequest',
      message,
    });
  });
});

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

describe('parseApplyBody', () => {
  it.each<[string, string, Json]>([
    [
      'JSON',
      '{"apiVersion":"v1","kind":"ConfigMap","data":{"a":"1"}}',
      { apiVersion: 'v1', kind: 'ConfigMap', data: { a: '1' } },
    ],
    [
      'YAML',
      'apiVersion: apps/v1\nkind: Deployment\nspec:\n  replicas: 2\n  paused: false\n  x: null\n',
      { apiVersion: 'apps/v1', kind: 'Deployment', spec: { replicas: 2, paused: false, x: null } },
    ],
    [
      'YAML timestamps stay strings',
      'metadata:\n  t: 2025-01-01T10:00:00Z\n',
      { metadata: { t: '2025-01-01T10:00:00Z' } },
    ],
  ])('parses %s', (_name, raw, expected) => {
    expect(parseApplyBody(raw)).toEqual(expected);
  });

  it.each<[string, string]>([
    ['bad YAML', 'a: [1, 2'],
    ['two documents', 'a: 1\n---\nb: 2\n'],
    ['an empty body', ''],
    ['a scalar', 'hello'],
    ['a list', '- a\n- b\n'],
  ])('rejects %s with a 400', (_name, raw) => {
    const err = thrown(() => parseApplyBody(raw));
    expect({ code: err.code, reason: err.reason }).toEqual({ code: 400, reason: 'BadRequest' });
    expect(err.message).toMatch(/^error decoding YAML: /);
  });
});

describe('patchTypeFromContentType', () => {
  it.each<[string, PatchType]>([
    ['application/json-patch+json', 'json'],
    ['application/merge-patch+json', 'merge'],
    ['application/strategic-merge-patch+json', 'strategic'],
    ['application/apply-patch+yaml', 'apply'],
    ['application/merge-patch+json; charset=utf-8', 'merge'],
    ['Application/Apply-Patch+YAML ;charset=UTF-8', 'apply'],
  ])('%j → %s', (contentType, expected) => {
    expect(patchTypeFromContentType(contentType)).toBe(expected);
  });

  it.each<[string | undefined]>([
    [undefined],
    ['application/json'],
    ['text/plain'],
    ['application/apply-patch+cbor'],
  ])('rejects %j with a 415', (contentType) => {
    const err = thrown(() => patchTypeFromContentType(contentType));
    expect({ code: err.code, reason: err.reason }).toEqual({ code: 415, reason: 'UnsupportedMediaType' });
    expect(err.message).toContain(`(got ${contentType ?? ''})`);
  });
});
