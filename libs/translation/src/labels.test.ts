import { describe, expect, it } from '@jest/globals';
import type { DesiredLrp } from '@opi/domain';
import {
  ANNOTATION_DESIRED_LRP,
  APP_SELECTOR,
  annotationsFor,
  desiredLrpJson,
  isLabelValue,
  labelsFor,
  lrpSelectorString,
  podAnnotationsFor,
  selectorFor,
  validLabels,
} from './labels.js';
import { GUID, VERSION, sampleLrp } from './lrp.fixture.js';

describe('isLabelValue', () => {
  it.each<[string, boolean]>([
    ['web', true],
    [GUID, true],
    ['a.b_c-d', true],
    ['x'.repeat(63), true],
    ['x'.repeat(64), false],
    ['', false],
    ['-web', false],
    ['web-', false],
    ['has space', false],
    ['a/b', false],
  ])('%j → %s', (value, valid) => {
    expect(isLabelValue(value)).toBe(valid);
  });
});

describe('labelsFor', () => {
  it('labels the workload with the LRP identity and its owners', () => {
    expect(labelsFor(sampleLrp())).toEqual({
      'cloudfoundry.org/guid': GUID,
      'cloudfoundry.org/version': VERSION,
      'cloudfoundry.org/source_type': 'APP',
      'cloudfoundry.org/app_guid': 'a1b2c3d4-0000-4000-8000-000000000001',
      'cloudfoundry.org/process_type': 'web',
      'cloudfoundry.org/space_guid': 'a1b2c3d4-0000-4000-8000-000000000002',
      'cloudfoundry.org/org_guid': 'a1b2c3d4-0000-4000-8000-000000000003',
      'app.kubernetes.io/managed-by': 'opi-server',
    });
  });

  it.each<[keyof DesiredLrp, string, string]>([
    ['appGuid', '', 'cloudfoundry.org/app_guid'],
    ['processType', 'web worker', 'cloudfoundry.org/process_type'],
    ['spaceGuid', 'x'.repeat(64), 'cloudfoundry.org/space_guid'],
    ['orgGuid', '_org', 'cloudfoundry.org/org_guid'],
  ])('omits %s = %j, which is no valid label value', (field, value, key) => {
    const labels = labelsFor(sampleLrp({ [field]: value }));
    expect(labels).not.toHaveProperty([key]);
    expect(labels['cloudfoundry.org/guid']).toBe(GUID);
  });
});

describe('selectors', () => {
  it('selectorFor is the identity only (a Deployment selector is immutable)', () => {
    expect(selectorFor(sampleLrp())).toEqual({
      matchLabels: { 'cloudfoundry.org/guid': GUID, 'cloudfoundry.org/version': VERSION },
    });
  });

  it('APP_SELECTOR lists every LRP workload of this service', () => {
    expect(APP_SELECTOR).toBe('app.kubernetes.io/managed-by=opi-server,cloudfoundry.org/source_type=APP');
  });

  it('lrpSelectorString narrows it to one LRP', () => {
    expect(lrpSelectorString('g', 'v')).toBe(
      `${APP_SELECTOR},cloudfoundry.org/guid=g,cloudfoundry.org/version=v`,
    );
  });
});

describe('annotationsFor', () => {
  it('carries the process guid, CC annotation, names and the desired state', () => {
    const lrp = sampleLrp();
    expect(annotationsFor(lrp)).toEqual({
      'cloudfoundry.org/process_guid': `${GUID}-${VERSION}`,
      'cloudfoundry.org/last_updated': '1589212345.123456',
      'cloudfoundry.org/app_name': 'My App',
      'cloudfoundry.org/space_name': 'dev',
      'cloudfoundry.org/org_name': 'acme',
      'cloudfoundry.org/desired_lrp': desiredLrpJson(lrp),
    });
  });

  it.each(['1589212345.123456', '1589212345.10', ' 1.0 ', '', 'not-a-number'])(
    'keeps last_updated %j byte for byte',
    (annotation) => {
      expect(annotationsFor(sampleLrp({ annotation }))['cloudfoundry.org/last_updated']).toBe(annotation);
    },
  );

  it('never stores registry credentials', () => {
    const json = annotationsFor(sampleLrp())[ANNOTATION_DESIRED_LRP]!;
    expect(json).not.toContain('s3cr:et');
    expect(json).not.toContain('robot');
    const { registry: _registry, ...rest } = sampleLrp();
    expect(JSON.parse(json)).toEqual(rest);
  });
});

describe('podAnnotationsFor', () => {
  it.each<[Record<string, string>, Record<string, string>]>([
    [{}, { 'cloudfoundry.org/process_guid': `${GUID}-${VERSION}` }],
    [
      { 'prometheus.io/scrape': 'true' },
      { 'prometheus.io/scrape': 'true', 'cloudfoundry.org/process_guid': `${GUID}-${VERSION}` },
    ],
    // The process guid is ours: a user annotation cannot replace it.
    [{ 'cloudfoundry.org/process_guid': 'fake' }, { 'cloudfoundry.org/process_guid': `${GUID}-${VERSION}` }],
  ])('user %j → %j', (userAnnotations, expected) => {
    expect(podAnnotationsFor(sampleLrp({ userAnnotations }))).toEqual(expected);
  });
});

describe('validLabels', () => {
  it('keeps the candidates with valid values, in order', () => {
    expect(
      validLabels([
        ['a', 'ok'],
        ['b', ''],
        ['c', 'not ok'],
        ['d', 'x'.repeat(64)],
        ['e', 'fine.too'],
      ]),
    ).toEqual({ a: 'ok', e: 'fine.too' });
  });
});
