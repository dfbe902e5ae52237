/**
 * applyStrategicMergePatch: lists merged by their Kubernetes merge keys, the $patch, $retainKeys,
 * $deleteFromPrimitiveList and $setElementOrder directives, inputs untouched, and malformed patches as 400s.
 */
import { describe, expect, it } from '@jest/globals';
import { applyStrategicMergePatch } from './patch.js';
import { copy, deepFreeze, thrown } from './patch.fixture.js';
import type { Json } from './types.js';

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
