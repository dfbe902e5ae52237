import { describe, expect, it } from '@jest/globals';
import type { DesiredLrp } from '@opi/domain';
import {
  ANNOTATIONS_MAX_BYTES,
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
import {
  ANNOTATION_EGRESS_RULES,
  ANNOTATION_PLACEMENT_TAGS,
  ANNOTATION_ROUTES,
  annotationBytes,
  omittedFields,
} from './kept-annotations.js';
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
      'cloudfoundry.org/placement_tags': '["iso-seg-1"]',
      'cloudfoundry.org/routes':
        '[{"hostname":"my-app.example.com","port":8080},{"hostname":"my-app.example.com/api","port":8080},' +
        '{"hostname":"*.example.com"}]',
      'cloudfoundry.org/egress_rules':
        '[{"protocol":"tcp","destinations":["10.0.0.0/8"],"ports":[443,8443],"log":false},' +
        '{"protocol":"udp","destinations":["10.1.0.1-10.1.0.9"],"portRange":{"start":5000,"end":5100},' +
        '"log":true,"annotations":["security_group_id:sg-1"]},' +
        '{"protocol":"icmp","destinations":["0.0.0.0/0"],"icmpInfo":{"type":8,"code":-1},"log":false}]',
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
    const { registry: _registry, routes: _r, egressRules: _e, placementTags: _p, ...rest } = sampleLrp();
    expect(JSON.parse(json)).toEqual(rest);
  });
});

describe('annotationsFor: routes, egress rules and placement tags', () => {
  const KEYS = [ANNOTATION_PLACEMENT_TAGS, ANNOTATION_ROUTES, ANNOTATION_EGRESS_RULES];
  const kept = (lrp: DesiredLrp) => {
    const a = annotationsFor(lrp);
    return KEYS.map((k) => a[k]);
  };
  /** A route and a rule as CC sends them, each a little different. */
  const route = (i: number) => ({ hostname: `app-${i}.apps.example.com/path-${i}`, port: 8080 });
  const rule = (i: number) => ({
    protocol: 'tcp',
    destinations: [`10.${i % 256}.0.0/16`],
    ports: [443, 8443],
    log: false,
    annotations: [`security_group_id:a1b2c3d4-0000-4000-8000-${String(i).padStart(12, '0')}`],
  });
  const many = <T>(n: number, make: (i: number) => T): T[] => Array.from({ length: n }, (_, i) => make(i));
  const total = (lrp: DesiredLrp) => annotationBytes(annotationsFor(lrp));

  it.each<[string, Partial<DesiredLrp>, (string | undefined)[]]>([
    // A record written before they were kept has none: none is written, none read back.
    [
      'absent',
      { routes: undefined, egressRules: undefined, placementTags: undefined },
      [undefined, undefined, undefined],
    ],
    ['empty', { routes: [], egressRules: [], placementTags: [] }, ['[]', '[]', '[]']],
  ])('%s fields → %j', (_what, overrides, expected) => {
    expect(kept(sampleLrp(overrides))).toEqual(expected);
  });

  it('fits a thousand routes and a thousand egress rules beside an ordinary desire', () => {
    const lrp = sampleLrp({ routes: many(1000, route), egressRules: many(1000, rule) });
    expect(omittedFields(annotationsFor(lrp))).toEqual([]);
    expect(JSON.parse(annotationsFor(lrp)[ANNOTATION_ROUTES]!)).toEqual(lrp.routes);
    expect(JSON.parse(annotationsFor(lrp)[ANNOTATION_EGRESS_RULES]!)).toEqual(lrp.egressRules);
    expect(total(lrp)).toBeLessThanOrEqual(ANNOTATIONS_MAX_BYTES);
  });

  it.each<[string, Partial<DesiredLrp>, string[]]>([
    ['too many egress rules', { egressRules: many(3000, rule) }, ['egressRules']],
    // Placement tags get room first, then routes: the rules are what does not fit.
    [
      'many routes, then too many rules',
      { routes: many(2000, route), egressRules: many(1000, rule) },
      ['egressRules'],
    ],
    [
      'every field at the contract limits',
      {
        placementTags: many(100, () => '"'.repeat(255)),
        routes: many(1000, (i) => ({ hostname: `${i}`.padEnd(4096, 'h'), port: 65535 })),
        egressRules: many(10_000, rule),
      },
      ['routes', 'egressRules'],
    ],
  ])('%s: a note stands for what does not fit, within the limit', (_what, overrides, omitted) => {
    const lrp = sampleLrp(overrides);
    const a = annotationsFor(lrp);
    expect(omittedFields(a)).toEqual(omitted);
    for (const k of KEYS) if (a[k]?.startsWith('[')) expect(() => JSON.parse(a[k]!) as unknown).not.toThrow();
    expect(a[ANNOTATION_EGRESS_RULES]).toMatch(/^omitted: \d+ bytes, more than the \d+ left/);
    expect(total(lrp)).toBeLessThanOrEqual(ANNOTATIONS_MAX_BYTES);
  });

  it('leaves room beside the largest desired_lrp (environment and command too large to annotate)', () => {
    const lrp = sampleLrp({
      environment: { VCAP_SERVICES: 'x'.repeat(900 * 1024) },
      userAnnotations: { 'prometheus.io/x': 'y'.repeat(100 * 1024) },
      routes: many(100, route),
      egressRules: many(100, rule),
    });
    expect(omittedFields(annotationsFor(lrp))).toEqual([]);
    expect(total(lrp)).toBeLessThanOrEqual(ANNOTATIONS_MAX_BYTES);
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
