import { describe, expect, it } from '@jest/globals';
import { StatusError } from './errors.js';
import { admitPod, formatQuantity, quotaStatus } from './quota.js';
import type { KubeObject } from './types.js';

function quota(name: string, hard: Record<string, string>): KubeObject {
  return {
    apiVersion: 'v1',
    kind: 'ResourceQuota',
    metadata: { name, namespace: 'ns', uid: name, resourceVersion: '1', creationTimestamp: '' },
    spec: { hard },
  };
}

function pod(
  name: { name?: string; generateName?: string },
  containers: { name: string; resources?: Record<string, Record<string, string>> }[],
  phase = 'Running',
): KubeObject {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name: '', namespace: 'ns', uid: '', resourceVersion: '', creationTimestamp: '', ...name },
    spec: { containers: containers.map((c) => ({ image: 'nginx', ...c })) },
    status: { phase },
  };
}

const small = { requests: { cpu: '500m', memory: '256Mi' }, limits: { cpu: '1', memory: '512Mi' } };

function refusal(fn: () => void): { code: number; reason: string; message: string } | undefined {
  try {
    fn();
    return undefined;
  } catch (err) {
    if (!(err instanceof StatusError)) throw err;
    return { code: err.code, reason: err.reason, message: err.message };
  }
}

describe('ResourceQuota admission (plugin/pkg/admission/resourcequota)', () => {
  const running = [pod({ name: 'a' }, [{ name: 'app', resources: small }])];

  it.each([
    [
      'pod count',
      { pods: '1' },
      { name: 'web-5d8c7b-92pml' },
      small,
      'pods "web-5d8c7b-92pml" is forbidden: exceeded quota: compute, requested: pods=1, used: pods=1, limited: pods=1',
    ],
    [
      'memory requests, binary quantities',
      { 'requests.memory': '512Mi' },
      { name: 'sts-1' },
      { requests: { memory: '300Mi' } },
      'pods "sts-1" is forbidden: exceeded quota: compute, requested: requests.memory=300Mi, used: requests.memory=256Mi, limited: requests.memory=512Mi',
    ],
    [
      'cpu limits and requests at once, sorted',
      { 'limits.cpu': '1500m', 'requests.cpu': '1', pods: '10' },
      { name: 'p' },
      { requests: { cpu: '600m' }, limits: { cpu: '600m' } },
      'pods "p" is forbidden: exceeded quota: compute, requested: limits.cpu=600m,requests.cpu=600m, used: limits.cpu=1,requests.cpu=500m, limited: limits.cpu=1500m,requests.cpu=1',
    ],
    [
      'a missing request, 1.24+ naming containers',
      { 'requests.cpu': '4' },
      { name: 'sts-0' },
      { requests: { memory: '1Gi' } },
      'pods "sts-0" is forbidden: failed quota: compute: must specify requests.cpu for: app',
    ],
  ])('refuses over %s', (_what, hard, name, resources, message) => {
    expect(
      refusal(() => {
        admitPod(pod(name, [{ name: 'app', resources }]), [quota('compute', hard)], () => running, 0, 30);
      }),
    ).toEqual({ code: 403, reason: 'Forbidden', message });
  });

  it('says "must specify" without container names before 1.24, missing resources sorted and joined by commas', () => {
    const p = pod({ name: 'sts-0' }, [
      { name: 'app' },
      { name: 'side', resources: { requests: { cpu: '1' } } },
    ]);
    const q = [quota('compute', { 'requests.cpu': '4', 'limits.memory': '1Gi' })];
    expect(
      refusal(() => {
        admitPod(p, q, () => [], 0, 20);
      })?.message,
    ).toBe('pods "sts-0" is forbidden: failed quota: compute: must specify limits.memory,requests.cpu');
    expect(
      refusal(() => {
        admitPod(p, q, () => [], 0, 24);
      })?.message,
    ).toBe(
      'pods "sts-0" is forbidden: failed quota: compute: must specify limits.memory for: app,side; requests.cpu for: app',
    );
  });

  it('takes a limit without a request as the request (the apiserver defaults it), and admits within the quota', () => {
    const p = pod({ name: 'ok' }, [{ name: 'app', resources: { limits: { cpu: '1', memory: '1Gi' } } }]);
    const q = [quota('compute', { 'requests.cpu': '2', 'requests.memory': '2Gi', pods: '2' })];
    expect(
      refusal(() => {
        admitPod(p, q, () => running, 0, 30);
      }),
    ).toBeUndefined();
  });

  it('does not count finished pods, and checks quotas in name order', () => {
    const done = [pod({ name: 'done' }, [{ name: 'app' }], 'Succeeded')];
    const p = pod({ name: 'x' }, [{ name: 'app' }]);
    expect(
      refusal(() => {
        admitPod(p, [quota('q', { pods: '1' })], () => done, 0, 30);
      }),
    ).toBeUndefined();
    const q = [quota('b', { pods: '0' }), quota('a', { pods: '0' })];
    expect(
      refusal(() => {
        admitPod(p, q, () => [], 0, 30);
      })?.message,
    ).toContain('exceeded quota: a,');
  });

  it('formats quantities canonically and fills status.used for every hard resource', () => {
    expect(
      [1, 0.5, 1.5, 2000, 1024 * 1024 * 512].map((value) => formatQuantity({ value, binary: false })),
    ).toEqual(['1', '500m', '1500m', '2k', '536870912']);
    expect(formatQuantity({ value: 2 ** 30, binary: true })).toBe('1Gi');
    expect(
      quotaStatus(quota('compute', { pods: '3', 'requests.memory': '1Gi', services: '2' }), running, 0),
    ).toEqual({
      hard: { pods: '3', 'requests.memory': '1Gi', services: '2' },
      used: { pods: '1', 'requests.memory': '256Mi', services: '0' },
    });
  });
});
