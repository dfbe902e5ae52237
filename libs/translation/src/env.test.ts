import { describe, expect, it } from '@jest/globals';
import { containerEnv, pairsEnv, podIdentityEnv } from './env.js';
import type { EnvVar } from '@opi/kube-objects';
import { sampleLrp } from './lrp.fixture.js';

const field = (name: string, fieldPath: string): EnvVar => ({
  name,
  valueFrom: { fieldRef: { apiVersion: 'v1', fieldPath } },
});
const DOWNWARD: EnvVar[] = [
  field('POD_NAME', 'metadata.name'),
  field('CF_INSTANCE_GUID', 'metadata.uid'),
  field('CF_INSTANCE_IP', 'status.podIP'),
  field('CF_INSTANCE_INTERNAL_IP', 'status.podIP'),
];
const portEnv = (p: number): EnvVar[] => [
  { name: 'CF_INSTANCE_PORT', value: String(p) },
  { name: 'CF_INSTANCE_ADDR', value: `0.0.0.0:${p}` },
  { name: 'CF_INSTANCE_PORTS', value: `[{"external":${p},"internal":${p}}]` },
];

describe('containerEnv', () => {
  it.each<[string, Record<string, string>, number[], EnvVar[]]>([
    ['no port, no variables: only the downward API', {}, [], DOWNWARD],
    [
      'request variables sorted by name, then PORT and the instance variables of the first port',
      { b: '2', B: '1', a: '3' },
      [8080, 9090],
      [
        { name: 'B', value: '1' },
        { name: 'a', value: '3' },
        { name: 'b', value: '2' },
        { name: 'PORT', value: '8080' },
        ...portEnv(8080),
        ...DOWNWARD,
      ],
    ],
    [
      "the request's PORT is kept and not doubled",
      { PORT: '3000' },
      [8080],
      [{ name: 'PORT', value: '3000' }, ...portEnv(8080), ...DOWNWARD],
    ],
    [
      'instance variables replace request variables of the same name',
      { CF_INSTANCE_PORT: '1', POD_NAME: 'x', CF_INSTANCE_IP: 'y', KEEP: 'z' },
      [8080],
      [{ name: 'KEEP', value: 'z' }, { name: 'PORT', value: '8080' }, ...portEnv(8080), ...DOWNWARD],
    ],
    [
      'without a port, CF_INSTANCE_PORT from the request stays',
      { CF_INSTANCE_PORT: '1' },
      [],
      [{ name: 'CF_INSTANCE_PORT', value: '1' }, ...DOWNWARD],
    ],
  ])('%s', (_what, environment, ports, expected) => {
    expect(containerEnv(sampleLrp({ environment, ports }))).toEqual(expected);
  });

  it('does not set CF_INSTANCE_INDEX (a Deployment has no stable ordinal)', () => {
    expect(containerEnv(sampleLrp()).map((e) => e.name)).not.toContain('CF_INSTANCE_INDEX');
  });

  it('is the same whatever order CC sends the variables in', () => {
    const a = containerEnv(sampleLrp({ environment: { X: '1', Y: '2', A: '3' } }));
    const b = containerEnv(sampleLrp({ environment: { A: '3', Y: '2', X: '1' } }));
    expect(a).toEqual(b);
  });
});

describe('podIdentityEnv', () => {
  it('is the downward API variables every CF container gets', () => {
    expect(podIdentityEnv()).toEqual(DOWNWARD);
  });
});

describe('pairsEnv', () => {
  const own: EnvVar[] = [{ name: 'OWN', value: 'ours' }, field('POD_NAME', 'metadata.name')];
  it.each<[string, { name: string; value: string }[], EnvVar[]]>([
    ['nothing requested', [], own],
    [
      'request order kept, then our own',
      [
        { name: 'Z', value: '1' },
        { name: 'A', value: '2' },
      ],
      [{ name: 'Z', value: '1' }, { name: 'A', value: '2' }, ...own],
    ],
    ['ours replace request variables of the same name', [{ name: 'OWN', value: 'theirs' }], own],
  ])('%s', (_what, pairs, expected) => {
    expect(pairsEnv(pairs, own)).toEqual(expected);
  });
});
