import { describe, expect, it } from '@jest/globals';
import type { DesiredLrp } from '@opi/domain';
import { lrpToDeployment } from './deployment.js';
import type { Deployment, Secret } from './k8s-objects.js';
import { ANNOTATION_DESIRED_LRP, ANNOTATION_LAST_UPDATED, desiredLrpJson } from './labels.js';
import { sampleLrp } from './lrp.fixture.js';
import { lrpFromWorkload, parseDesiredLrp } from './rebuild.js';
import { registrySecret } from './pull-secret.js';
import { lrpToStatefulSet } from './statefulset.js';

const settings = { runAsNonRoot: true };

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
    expect(lrpFromWorkload(stripped)).toEqual(sampleLrp({ registry: undefined }));
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

describe('parseDesiredLrp', () => {
  const { registry: _registry, ...stored } = sampleLrp();
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
