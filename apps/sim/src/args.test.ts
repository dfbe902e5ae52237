import { describe, expect, it } from '@jest/globals';
import yaml from 'js-yaml';
import { startSimulator } from '@opi/kube-sim';
import { parseSimArgs } from './args.js';

function serverOf(kubeconfig: string): string {
  const doc = yaml.load(kubeconfig) as { clusters: { cluster: { server: string } }[] };
  return doc.clusters[0]?.cluster.server ?? '';
}

describe('parseSimArgs', () => {
  it('reads --kubernetes-version', () => {
    expect(parseSimArgs([]).kubernetesVersion).toBeUndefined();
    expect(parseSimArgs(['--kubernetes-version', '1.34']).kubernetesVersion).toBe('1.34');
  });

  it('reads --feature-gates, and refuses a gate it does not model', () => {
    expect(parseSimArgs([]).featureGates).toEqual({});
    expect(parseSimArgs(['--feature-gates', 'MaxUnavailableStatefulSet=true']).featureGates).toEqual({
      MaxUnavailableStatefulSet: true,
    });
    expect(() => parseSimArgs(['--feature-gates', 'SomethingElse=true'])).toThrow(
      /MaxUnavailableStatefulSet/,
    );
  });

  it('reads --advertise-host next to --host', () => {
    const a = parseSimArgs([
      '--host',
      '0.0.0.0',
      '--port',
      '6443',
      '--advertise-host',
      'sim',
      '--kubeconfig',
      '/shared/kubeconfig',
    ]);
    expect(a).toMatchObject({
      host: '0.0.0.0',
      port: 6443,
      advertiseHost: 'sim',
      kubeconfig: '/shared/kubeconfig',
    });
  });

  it('leaves it unset by default', () => {
    expect(parseSimArgs([]).advertiseHost).toBeUndefined();
  });

  it('reads --pod-range and --no-serve-pods, and refuses a range outside 127.0.0.0/8', () => {
    expect(parseSimArgs([])).toMatchObject({ podRange: undefined, servePods: true });
    expect(parseSimArgs(['--pod-range', '127.42.0.0/16', '--no-serve-pods'])).toMatchObject({
      podRange: '127.42.0.0/16',
      servePods: false,
    });
    expect(() => parseSimArgs(['--pod-range', '10.244.0.0/16'])).toThrow(/^--pod-range: .*10\.244\.0\.0\/16/);
    expect(() => parseSimArgs(['--pod-range', '127.0.0.0/16'])).toThrow(/^--pod-range: /);
  });
});

describe('the kubeconfig names the advertised host', () => {
  it('names --advertise-host, not the bound address (a compose service name)', async () => {
    const sim = await startSimulator({ host: '0.0.0.0', advertiseHost: 'sim', controllers: false });
    try {
      expect(serverOf(sim.kubeconfig())).toBe(`https://sim:${sim.port}`);
      expect(sim.url).toBe(`https://sim:${sim.port}`);
    } finally {
      await sim.close();
    }
  });

  it('names 127.0.0.1 for a wildcard address without one, and that address answers', async () => {
    const sim = await startSimulator({ host: '0.0.0.0', controllers: false });
    try {
      expect(serverOf(sim.kubeconfig())).toBe(`https://127.0.0.1:${sim.port}`);
      const res = await fetch(`${sim.httpUrl}/version`, {
        headers: { authorization: `Bearer ${sim.token}` },
      });
      expect(res.status).toBe(200);
    } finally {
      await sim.close();
    }
  });

  it('puts an IPv6 advertised host in brackets', async () => {
    const sim = await startSimulator({ advertiseHost: '::1', controllers: false });
    try {
      expect(serverOf(sim.kubeconfig())).toBe(`https://[::1]:${sim.port}`);
    } finally {
      await sim.close();
    }
  });
});
