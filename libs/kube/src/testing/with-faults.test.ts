import { describe, expect, it } from '@jest/globals';
import { KubeApiError } from '../port/errors.js';
import type { Stored } from '../port/objects.js';
import type { Deployment } from '@opi/kube-objects';
import type { DeleteResult, KubernetesPort } from '../port/port.js';
import { withFaults } from './with-faults.js';

/** A port stub holding Deployments in a map; every other resource is missing (and unused here). */
function stub(): { port: KubernetesPort; held: Map<string, Stored<Deployment>>; calls: string[] } {
  const held = new Map<string, Stored<Deployment>>();
  const calls: string[] = [];
  const deployments = {
    get(_ns: string, name: string): Promise<Stored<Deployment> | undefined> {
      calls.push(`get ${name}`);
      return Promise.resolve(held.get(name));
    },
    create(_ns: string, d: Deployment): Promise<Stored<Deployment>> {
      calls.push(`create ${d.metadata.name}`);
      const stored = {
        ...d,
        metadata: { ...d.metadata, uid: 'u', resourceVersion: '1' },
      } as Stored<Deployment>;
      held.set(d.metadata.name, stored);
      return Promise.resolve(stored);
    },
    delete(_ns: string, name: string): Promise<DeleteResult> {
      calls.push(`delete ${name}`);
      if (name === 'broken') return Promise.reject(new Error('its own failure'));
      return Promise.resolve(held.delete(name) ? 'deleted' : 'absent');
    },
  };
  const port = { deployments } as Partial<KubernetesPort> as KubernetesPort;
  return { port, held, calls };
}

const web: Deployment = { metadata: { name: 'web' } };

describe('withFaults', () => {
  it('passes calls through without rules', async () => {
    const { port, calls } = stub();
    const kube = withFaults(port);
    await kube.deployments.create('ns', web);
    await expect(kube.deployments.get('ns', 'web')).resolves.toMatchObject({ metadata: { uid: 'u' } });
    expect(calls).toEqual(['create web', 'get web']);
  });

  it('fails a call before it runs, once by default, with a transient 503', async () => {
    const { port, held, calls } = stub();
    const kube = withFaults(port, [{ resource: 'deployments', verb: 'create' }]);
    const err: unknown = await kube.deployments.create('ns', web).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(KubeApiError);
    expect(err).toMatchObject({ status: 503, reason: 'ServiceUnavailable', transient: true });
    expect(held.size).toBe(0);
    expect(calls).toEqual([]);
    await kube.deployments.create('ns', web);
    expect(held.has('web')).toBe(true);
  });

  it('fails a call after its write took effect', async () => {
    const { port, held } = stub();
    const kube = withFaults(port, [{ resource: 'deployments', verb: 'create', when: 'after' }]);
    await expect(kube.deployments.create('ns', web)).rejects.toMatchObject({ status: 503 });
    expect(held.has('web')).toBe(true);
  });

  it('keeps a call’s own failure under an after rule, and does not use the rule up', async () => {
    const { port } = stub();
    const kube = withFaults(port);
    const fault = kube.faults.inject({ resource: 'deployments', verb: 'delete', when: 'after' });
    await expect(kube.deployments.delete('ns', 'broken')).rejects.toThrow('its own failure');
    expect(fault).toMatchObject({ fired: 0, remaining: 1 });
    await expect(kube.deployments.delete('ns', 'web')).rejects.toMatchObject({ status: 503 });
    expect(fault).toMatchObject({ fired: 1, remaining: 0 });
  });

  it('makes a call hang without running it', async () => {
    const { port, calls } = stub();
    const kube = withFaults(port, [{ resource: 'deployments', verb: 'get', when: 'hang' }]);
    const settled = await Promise.race([
      kube.deployments.get('ns', 'web').then(() => 'settled'),
      new Promise((r) => {
        setTimeout(() => {
          r('pending');
        }, 50);
      }),
    ]);
    expect(settled).toBe('pending');
    expect(calls).toEqual([]);
    await expect(kube.deployments.get('ns', 'web')).resolves.toBeUndefined();
  });

  it('matches by arguments, counts, and fails until cleared', async () => {
    const { port, calls } = stub();
    const kube = withFaults(port);
    const fault = kube.faults.inject({
      resource: 'deployments',
      verb: 'get',
      match: (_ns, name) => name === 'db',
      times: Infinity,
    });
    await expect(kube.deployments.get('ns', 'web')).resolves.toBeUndefined();
    for (let i = 0; i < 3; i++)
      await expect(kube.deployments.get('ns', 'db')).rejects.toBeInstanceOf(KubeApiError);
    expect(fault.fired).toBe(3);
    kube.faults.clear();
    await expect(kube.deployments.get('ns', 'db')).resolves.toBeUndefined();
    expect(calls).toEqual(['get web', 'get db']);
  });

  it('fails a given number of times with the rule’s own error', async () => {
    const { port } = stub();
    const kube = withFaults(port);
    const invalid = () =>
      new KubeApiError({ status: 422, reason: 'Invalid', message: 'injected fault', transient: false });
    const fault = kube.faults.inject({ resource: 'deployments', verb: 'create', times: 2, error: invalid });
    await expect(kube.deployments.create('ns', web)).rejects.toMatchObject({ status: 422, transient: false });
    await expect(kube.deployments.create('ns', web)).rejects.toMatchObject({ status: 422 });
    await expect(kube.deployments.create('ns', web)).resolves.toBeDefined();
    expect(fault).toMatchObject({ fired: 2, remaining: 0 });

    const removed = kube.faults.inject({ resource: 'deployments', verb: 'create' });
    removed.remove();
    await expect(kube.deployments.create('ns', web)).resolves.toBeDefined();
  });
});
