/**
 * A patch request's framing: the patch type its Content-Type names (415 otherwise) and an apply body read
 * as JSON or one YAML document (400 otherwise).
 */
import { describe, expect, it } from '@jest/globals';
import type { PatchType } from './patch.js';
import { parseApplyBody, patchTypeFromContentType } from './patch.js';
import { thrown } from './patch.fixture.js';
import type { Json } from './types.js';

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
