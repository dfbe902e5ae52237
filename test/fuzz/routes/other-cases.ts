/**
 * Cases off the body routes (the lists, odd methods, paths that match no route), and any route's cases
 * interleaved.
 */
import fc from 'fast-check';
import { type Body, anyName, extraHeaders, rawBody } from '../arbitraries.js';
import { desireCase, lrpReadCase, updateCase } from './app-cases.js';
import { type Case, jsonHeaders, segment } from './requests.js';
import { stageCase, taskCase } from './task-cases.js';

/** The lists, odd methods, and paths that match no route (traversal, doubled slashes, queries). */
export const otherCase: fc.Arbitrary<Case> = fc
  .record({
    method: fc.constantFrom(
      'GET',
      'GET',
      'HEAD',
      'OPTIONS',
      'POST',
      'PUT',
      'DELETE',
      'PATCH',
      'TRACE',
      'FOO',
      'CONNECT',
    ),
    path: fc.oneof(
      fc.constantFrom(
        '/apps',
        '/tasks',
        '/apps/',
        '/tasks/',
        '/apps?x=1&x=2',
        '/apps?__proto__[x]=1',
        '//apps',
        '/apps/../tasks',
        '/apps/%2e%2e/tasks',
        '/./apps',
        '/APPS',
        '/apps/a/b/c/d/e',
        '/stage',
        '/stage/',
        '*',
        'http://evil.example/apps',
        '/%',
        '/%00',
        '/apps/%c0%ae%c0%ae/x',
      ),
      fc.webPath(),
      fc.array(segment(anyName), { maxLength: 6 }).map((s) => `/${s.join('/')}`),
    ),
    headers: extraHeaders,
    body: fc.option(rawBody(fc.jsonValue() as fc.Arbitrary<Body>), { freq: 3 }),
  })
  .map(({ method, path, headers, body }) => ({
    request: {
      method,
      path,
      headers: [...(body ? jsonHeaders(body) : []), ...headers],
      ...(body ? { body: body.bytes } : {}),
    },
    intent: { route: 'other' as const },
  }));

export const anyCase: fc.Arbitrary<Case> = fc.oneof(
  { arbitrary: desireCase, weight: 5 },
  { arbitrary: updateCase, weight: 2 },
  { arbitrary: lrpReadCase, weight: 3 },
  { arbitrary: taskCase, weight: 3 },
  { arbitrary: stageCase, weight: 2 },
  { arbitrary: otherCase, weight: 2 },
);
