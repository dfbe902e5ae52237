import { describe, expect, it } from '@jest/globals';
import type { DesiredLrp } from '@opi/domain';
import { lrpToDeployment } from './deployment.js';
import type { Deployment, Secret } from '@opi/kube-objects';
import {
  ANNOTATION_EGRESS_RULES,
  ANNOTATION_PLACEMENT_TAGS,
  ANNOTATION_ROUTES,
  keptFromAnnotations,
} from './kept-annotations.js';
import { ANNOTATION_DESIRED_LRP, ANNOTATION_LAST_UPDATED, desiredLrpJson } from './labels.js';
import { sampleLrp } from './lrp.fixture.js';
import { lrpFromWorkload, parseDesiredLrp } from './rebuild.js';
import { registrySecret } from './pull-secret.js';
import { lrpToStatefulSet } from './statefulset.js';

const settings = { runAsNonRoot: true };

/** The desire as a record written before routes, egress rules and placement tags were kept. */
function withoutKept(lrp: DesiredLrp): DesiredLrp {
  const { routes: _r, egressRules: _e, placementTags: _p, ...rest } = lrp;
  return rest;
}

describe('lrpFromWorkload', () => {
  it.each<[string, DesiredLrp]>([
    ['a full desire', sampleLrp()],
    ['no registry', sampleLrp({ registry: undefined })],
    [
      'Docker Hub credentials',
      sampleLrp({ registry: { server: 'https://index.docker.io/v1/', username: 'u', password: '' } }),
    ],
    [
      'a minimal desire',
      sampleLrp({
        ports: [],
        environment: {},
        instances: 0,
        annotation: '',
        command: [],
        volumeMounts: [],
        userAnnotations: {},
        healthCheck: { type: 'none', httpEndpoint: '', timeoutMs: 0 },
        startTimeoutMs: 0,
        registry: undefined,
      }),
    ],
    [
      'odd strings',
      sampleLrp({
        appName: 'Ünïcødé ☃ "q"',
        annotation: ' 1.10 ',
        environment: JSON.parse('{"__proto__":"\\u0000"}'),
      }),
    ],
    [
      // Found by the fuzz tests: the whole desired LRP in one annotation went over the API's 256 KiB.
      'an environment too large for an annotation',
      sampleLrp({
        ports: [8080],
        environment: { VCAP_SERVICES: 'x'.repeat(300 * 1024), OTHER: 'y' },
        command: ['/bin/sh', '-c', 'c'.repeat(100 * 1024)],
      }),
    ],
    [
      'no routes, egress rules or placement tags (a record from before they were kept)',
      withoutKept(sampleLrp()),
    ],
    [
      'empty routes, egress rules and placement tags',
      sampleLrp({ routes: [], egressRules: [], placementTags: [] }),
    ],
    [
      'routes of every shape CC sends',
      sampleLrp({
        routes: [
          { hostname: 'app.example.com', port: 8080 },
          { hostname: 'www.app.example.com', port: 8080 },
          { hostname: 'app.example.com/api', port: 9090 },
          { hostname: '*.example.com', port: 8080 },
          { hostname: 'no-port.example.com' },
        ],
      }),
    ],
    [
      // Diego's SecurityGroupRule in protobuf JSON, as CC sends it (camelCase, defaults left out).
      'egress rules of every shape CC sends',
      sampleLrp({
        egressRules: [
          { protocol: 'tcp', destinations: ['10.0.0.1'], ports: [80, 443], log: false },
          {
            protocol: 'udp',
            destinations: ['10.0.0.0-10.0.0.255'],
            portRange: { start: 53, end: 54 },
            log: true,
          },
          { protocol: 'icmp', destinations: ['0.0.0.0/0'], icmpInfo: { type: -1, code: -1 }, log: false },
          { protocol: 'icmp', destinations: ['1.1.1.1'], icmpInfo: { type: 0, code: 0 }, log: false },
          {
            protocol: 'all',
            destinations: ['192.168.0.0/16', '172.16.0.0/12'],
            log: false,
            annotations: ['security_group_id:a', 'security_group_id:b'],
          },
        ],
      }),
    ],
    ['several placement tags', sampleLrp({ placementTags: ['iso-seg-1', 'persistent_isolation_segment'] })],
  ])('round-trips %s', (_what, lrp) => {
    expect(lrpFromWorkload(lrpToDeployment(lrp, settings), registrySecret(lrp))).toEqual(lrp);
    // A StatefulSet's index variables come from the downward API: not the request's, so not read back.
    for (const instanceIndexEnv of [true, false]) {
      const sts = lrpToStatefulSet(lrp, { ...settings, instanceIndexEnv });
      expect(lrpFromWorkload(sts, registrySecret(lrp))).toEqual(lrp);
    }
  });

  it('keeps the annotations of an LRP with a large environment within 256 KiB', () => {
    const lrp = sampleLrp({ environment: { VCAP_SERVICES: 'x'.repeat(900 * 1024) } });
    const annotations = lrpToDeployment(lrp, settings).metadata.annotations ?? {};
    const bytes = Object.entries(annotations).reduce((n, [k, v]) => n + k.length + Buffer.byteLength(v), 0);
    expect(bytes).toBeLessThan(256 * 1024);
  });

  it('takes instances from spec.replicas and the annotation from last_updated (updates patch those)', () => {
    const d = lrpToDeployment(sampleLrp(), settings);
    d.spec.replicas = 5;
    d.metadata.annotations![ANNOTATION_LAST_UPDATED] = '1700000000.1';
    expect(lrpFromWorkload(d, registrySecret(sampleLrp()))).toEqual(
      sampleLrp({ instances: 5, annotation: '1700000000.1' }),
    );
  });

  it('falls back to the stored values when replicas and last_updated are missing', () => {
    const d = lrpToDeployment(sampleLrp(), settings);
    const stripped: Deployment = {
      metadata: {
        name: 'd',
        annotations: { [ANNOTATION_DESIRED_LRP]: d.metadata.annotations![ANNOTATION_DESIRED_LRP]! },
      },
    };
    expect(lrpFromWorkload(stripped)).toEqual(withoutKept(sampleLrp({ registry: undefined })));
  });

  it('reads the routes an update wrote (the converge replaces the annotations with the record)', () => {
    const routes = [{ hostname: 'moved.example.com/v2', port: 8080 }];
    const updated = sampleLrp({ routes, instances: 4, annotation: '1700000000.2' });
    expect(lrpFromWorkload(lrpToDeployment(updated, settings), registrySecret(updated))?.routes).toEqual(
      routes,
    );
  });

  it.each<[string, Secret | undefined]>([
    ['no Secret', undefined],
    ['a Secret without data', { metadata: { name: 's' } }],
    ['a Secret with another key', { metadata: { name: 's' }, data: { other: 'eA==' } }],
    [
      'a Secret that is not a docker config',
      { metadata: { name: 's' }, data: { '.dockerconfigjson': 'bm9wZQ==' } },
    ],
  ])('has no registry with %s', (_what, secret) => {
    expect(lrpFromWorkload(lrpToDeployment(sampleLrp(), settings), secret)?.registry).toBeUndefined();
  });

  it.each<[string, Record<string, string> | undefined]>([
    ['no annotations', undefined],
    ['no desired_lrp annotation', { [ANNOTATION_LAST_UPDATED]: '1' }],
    ['an annotation that is not JSON', { [ANNOTATION_DESIRED_LRP]: '{' }],
  ])('is undefined with %s', (_what, annotations) => {
    expect(
      lrpFromWorkload({ metadata: { name: 'd', ...(annotations ? { annotations } : {}) } }),
    ).toBeUndefined();
  });
});

describe('routes, egress rules and placement tags read back', () => {
  const rule = { protocol: 'tcp', destinations: ['10.0.0.1'], log: false };
  const workload = (key: string, value: string): Deployment => {
    const d = lrpToDeployment(sampleLrp(), settings);
    d.metadata.annotations = { ...d.metadata.annotations, [key]: value };
    return d;
  };

  it.each<[string, string, Partial<DesiredLrp>]>([
    [
      ANNOTATION_ROUTES,
      '[{"hostname":"a.example.com","port":8080},{"hostname":"*.example.com"}]',
      { routes: [{ hostname: 'a.example.com', port: 8080 }, { hostname: '*.example.com' }] },
    ],
    [
      ANNOTATION_EGRESS_RULES,
      JSON.stringify([{ ...rule, portRange: { start: 1, end: 2 } }]),
      { egressRules: [{ ...rule, portRange: { start: 1, end: 2 } }] },
    ],
    [ANNOTATION_PLACEMENT_TAGS, '["a","b"]', { placementTags: ['a', 'b'] }],
  ])('reads %s = %s', (key, value, expected) => {
    expect(lrpFromWorkload(workload(key, value), registrySecret(sampleLrp()))).toEqual(sampleLrp(expected));
  });

  // Anyone with edit rights can change an annotation: whatever is not what the service writes leaves the
  // record to CC (which desires it again whole) rather than restoring a record that lacks part of it.
  it.each<[string, string, string]>([
    ['routes', ANNOTATION_ROUTES, '{'],
    ['routes', ANNOTATION_ROUTES, 'null'],
    ['routes', ANNOTATION_ROUTES, '{}'],
    ['routes', ANNOTATION_ROUTES, '"a.example.com"'],
    ['routes', ANNOTATION_ROUTES, '[1]'],
    ['routes', ANNOTATION_ROUTES, '[null]'],
    ['routes', ANNOTATION_ROUTES, '[{"port":8080}]'],
    ['routes', ANNOTATION_ROUTES, '[{"hostname":1}]'],
    ['routes', ANNOTATION_ROUTES, '[{"hostname":"a","port":"8080"}]'],
    ['routes', ANNOTATION_ROUTES, '[{"hostname":"a","port":70000}]'],
    ['routes', ANNOTATION_ROUTES, '[{"hostname":"a","port":-1}]'],
    ['routes', ANNOTATION_ROUTES, '[{"hostname":"a","port":80.5}]'],
    ['routes', ANNOTATION_ROUTES, '[{"hostname":"a","port":null}]'],
    // A key the service never writes (here one CC drops before OPI) is not read in part.
    ['routes', ANNOTATION_ROUTES, '[{"hostname":"a","route_service_url":"https://rs.example.com"}]'],
    ['routes', ANNOTATION_ROUTES, 'omitted: 300000 bytes, more than the 200000 left'],
    ['egress rules', ANNOTATION_EGRESS_RULES, '[{"destinations":["1.2.3.4"],"log":false}]'],
    ['egress rules', ANNOTATION_EGRESS_RULES, '[{"protocol":6,"destinations":["1.2.3.4"],"log":false}]'],
    ['egress rules', ANNOTATION_EGRESS_RULES, '[{"protocol":"tcp","destinations":"1.2.3.4","log":false}]'],
    ['egress rules', ANNOTATION_EGRESS_RULES, '[{"protocol":"tcp","destinations":[1],"log":false}]'],
    ['egress rules', ANNOTATION_EGRESS_RULES, '[{"protocol":"tcp","destinations":["1.2.3.4"]}]'],
    ['egress rules', ANNOTATION_EGRESS_RULES, '[{"protocol":"tcp","destinations":["1.2.3.4"],"log":"true"}]'],
    ['egress rules', ANNOTATION_EGRESS_RULES, JSON.stringify([{ ...rule, ports: [70000] }])],
    ['egress rules', ANNOTATION_EGRESS_RULES, JSON.stringify([{ ...rule, ports: '443' }])],
    ['egress rules', ANNOTATION_EGRESS_RULES, JSON.stringify([{ ...rule, ports: null }])],
    ['egress rules', ANNOTATION_EGRESS_RULES, JSON.stringify([{ ...rule, portRange: { start: 1 } }])],
    [
      'egress rules',
      ANNOTATION_EGRESS_RULES,
      JSON.stringify([{ ...rule, portRange: { start: '1', end: 2 } }]),
    ],
    [
      'egress rules',
      ANNOTATION_EGRESS_RULES,
      JSON.stringify([{ ...rule, portRange: { start: 1.5, end: 2 } }]),
    ],
    [
      'egress rules',
      ANNOTATION_EGRESS_RULES,
      JSON.stringify([{ ...rule, portRange: { start: 1, end: 2, x: 3 } }]),
    ],
    ['egress rules', ANNOTATION_EGRESS_RULES, JSON.stringify([{ ...rule, icmpInfo: { type: 8 } }])],
    ['egress rules', ANNOTATION_EGRESS_RULES, JSON.stringify([{ ...rule, icmpInfo: [8, 0] }])],
    ['egress rules', ANNOTATION_EGRESS_RULES, JSON.stringify([{ ...rule, annotations: [1] }])],
    // CC sends protobuf JSON (camelCase) in every version with an OPI client (407dd58502 on), and the
    // contract reads only that: a snake_case key is not the service's, and a rule read without its
    // range would allow every port.
    [
      'egress rules',
      ANNOTATION_EGRESS_RULES,
      JSON.stringify([{ ...rule, port_range: { start: 1, end: 2 } }]),
    ],
    ['egress rules', ANNOTATION_EGRESS_RULES, JSON.stringify([{ ...rule, icmp_info: { type: 8, code: 0 } }])],
    ['egress rules', ANNOTATION_EGRESS_RULES, 'omitted: 300000 bytes, more than the 200000 left'],
    ['placement tags', ANNOTATION_PLACEMENT_TAGS, '"iso-seg-1"'],
    ['placement tags', ANNOTATION_PLACEMENT_TAGS, '{}'],
    ['placement tags', ANNOTATION_PLACEMENT_TAGS, '[1]'],
    ['placement tags', ANNOTATION_PLACEMENT_TAGS, '[null]'],
    ['placement tags', ANNOTATION_PLACEMENT_TAGS, ''],
  ])('restores no record from %s %s', (_what, key, value) => {
    expect(lrpFromWorkload(workload(key, value))).toBeUndefined();
    expect(keptFromAnnotations({ [key]: value })).toBeUndefined();
  });

  it('builds each item from its checked fields only', () => {
    expect(
      keptFromAnnotations({
        [ANNOTATION_ROUTES]: '[{"hostname":"a"}]',
        [ANNOTATION_EGRESS_RULES]: JSON.stringify([{ ...rule, icmpInfo: { type: 3, code: 4 } }]),
      }),
    ).toEqual({
      routes: [{ hostname: 'a' }],
      egressRules: [{ ...rule, icmpInfo: { type: 3, code: 4 } }],
    });
    expect(keptFromAnnotations({})).toEqual({});
  });
});

describe('parseDesiredLrp', () => {
  const { registry: _registry, ...stored } = withoutKept(sampleLrp());
  const withField = (field: string, value: unknown) => JSON.stringify({ ...stored, [field]: value });

  it('ignores unknown fields', () => {
    expect(parseDesiredLrp(withField('future', { x: 1 }))).toEqual(stored);
  });

  it('never reads registry credentials from the annotation', () => {
    expect(parseDesiredLrp(withField('registry', sampleLrp().registry))).toEqual(stored);
  });

  it('accepts what desiredLrpJson writes', () => {
    expect(parseDesiredLrp(desiredLrpJson(sampleLrp()))).toEqual(stored);
  });

  it.each<[string, unknown]>([
    ['processGuid', 1],
    ['guid', undefined],
    ['version', null],
    ['processType', []],
    ['appGuid', {}],
    ['appName', 1],
    ['spaceGuid', 1],
    ['spaceName', 1],
    ['orgGuid', 1],
    ['orgName', 1],
    ['namespace', 1],
    ['annotation', 1589212345.1],
    ['image', undefined],
    ['instances', -1],
    ['instances', 1.5],
    ['instances', '3'],
    ['startTimeoutMs', null],
    ['memoryMb', '256'],
    ['diskMb', undefined],
    ['cpuWeight', Number.NaN],
    ['ports', '8080'],
    ['ports', [8080, '9090']],
    ['command', 'sh'],
    ['command', [1]],
    ['environment', []],
    ['environment', { A: 1 }],
    ['userAnnotations', null],
    ['userAnnotations', { a: true }],
    ['healthCheck', 'port'],
    ['healthCheck', { type: 'exec', httpEndpoint: '', timeoutMs: 0 }],
    ['healthCheck', { type: 'port', timeoutMs: 0 }],
    ['healthCheck', { type: 'port', httpEndpoint: '', timeoutMs: -1 }],
    ['volumeMounts', {}],
    ['volumeMounts', [{ claimName: 'a' }]],
    ['volumeMounts', ['a']],
  ])('refuses %s = %j', (field, value) => {
    expect(parseDesiredLrp(withField(field, value))).toBeUndefined();
  });

  it.each(['null', '[]', '"x"', '1', ''])('refuses %j', (json) => {
    expect(parseDesiredLrp(json)).toBeUndefined();
  });
});
