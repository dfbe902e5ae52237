/**
 * updateLrpSchema against CC's update bodies: instances, annotation and image accepted (the image trimmed,
 * the annotation kept byte for byte, unknown fields dropped), every invalid body refused naming the field.
 */
import { describe, expect, it } from '@jest/globals';
import { issuesOf, namesField } from './issues.fixture.js';
import { GUID, VERSION } from './testing.js';
import { describeIssues, updateLrpSchema } from './schemas.js';

describe('updateLrpSchema', () => {
  const valid = () => ({
    guid: GUID,
    version: VERSION,
    update: { instances: 2, annotation: '1589212346.654321' },
  });

  it.each<[string, Record<string, unknown>]>([
    ['instances and annotation', valid()],
    ['an image', { ...valid(), update: { ...valid().update, image: 'nginx:2' } }],
    ['an empty image', { ...valid(), update: { ...valid().update, image: '' } }],
    [
      'routes and unknown fields',
      { ...valid(), update: { ...valid().update, routes: { cf_router: [] }, x: 1 }, y: 2 },
    ],
    ['zero instances', { ...valid(), update: { ...valid().update, instances: 0 } }],
  ])('accepts %s', (_what, body) => {
    const r = updateLrpSchema.safeParse(body);
    if (!r.success) throw new Error(describeIssues(r.error));
    expect(r.data.update.instances).toBe((body['update'] as { instances: number }).instances);
  });

  it.each<[string, string]>([
    ['nginx:2', 'nginx:2'],
    ['  registry.example.com/a:1 ', 'registry.example.com/a:1'],
    ['   ', ''],
    ['', ''],
  ])('trims the image %j to %j (blank leaves the image as is)', (image, expected) => {
    expect(updateLrpSchema.parse({ ...valid(), update: { ...valid().update, image } }).update.image).toBe(
      expected,
    );
  });

  it('keeps the annotation byte for byte and drops unknown fields', () => {
    const r = updateLrpSchema.parse({
      ...valid(),
      update: {
        ...valid().update,
        annotation: 'ünïcødé 1589212345.1234560',
        routes: { 'cf-router': [{ hostname: 'a.example.com', port: 8080 }], a: 1 },
      },
      extra: true,
    });
    expect(r).toEqual({
      guid: GUID,
      version: VERSION,
      update: {
        instances: 2,
        annotation: 'ünïcødé 1589212345.1234560',
        routes: { 'cf-router': [{ hostname: 'a.example.com', port: 8080 }] },
      },
    });
  });

  it.each<[string, unknown, string]>([
    ['missing guid', { ...valid(), guid: undefined }, 'guid'],
    ['a guid with a slash', { ...valid(), guid: 'a/b' }, 'guid'],
    ['a version of 64 characters', { ...valid(), version: 'v'.repeat(64) }, 'version'],
    ['missing update', { guid: GUID, version: VERSION }, 'update'],
    ['update as an array', { ...valid(), update: [] }, 'update'],
    ['missing instances', { ...valid(), update: { annotation: 'x' } }, 'update.instances'],
    ['negative instances', { ...valid(), update: { instances: -1, annotation: 'x' } }, 'update.instances'],
    [
      'instances as a string',
      { ...valid(), update: { instances: '2', annotation: 'x' } },
      'update.instances',
    ],
    ['missing annotation', { ...valid(), update: { instances: 1 } }, 'update.annotation'],
    [
      'annotation as a number',
      { ...valid(), update: { instances: 1, annotation: 1589212345.1 } },
      'update.annotation',
    ],
    ['image as a number', { ...valid(), update: { ...valid().update, image: 7 } }, 'update.image'],
    ['an array body', [valid()], 'body'],
  ])('refuses %s', (_what, body, field) => {
    const message = issuesOf(updateLrpSchema.safeParse(body));
    expect(namesField(message, field)).toBe(true);
  });
});
