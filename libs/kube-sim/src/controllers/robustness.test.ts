import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import type { KubeObject } from '../types.js';
import {
  type Harness,
  container,
  deploymentBody,
  env,
  eventually,
  isPodReady,
  podTemplate,
  startHarness,
  status,
} from './test-harness.js';

let h: Harness;
let logged: string[] = [];
const consoleError = console.error;
beforeEach(async () => {
  // Controllers log only unexpected failures: none may happen here.
  logged = [];
  console.error = (...args: unknown[]) => {
    logged.push(args.map(String).join(' '));
  };
  h = await startHarness();
});
afterEach(async () => {
  await h.stop();
  console.error = consoleError;
  expect(logged).toEqual([]);
});

const setImage = (d: KubeObject, image: string) => {
  const next = structuredClone(d);
  (
    next['spec'] as { template: { spec: { containers: { image: string }[] } } }
  ).template.spec.containers[0]!.image = image;
  return next;
};

describe('controllers under churn', () => {
  it('converges after template changes in quick succession', async () => {
    h.create('apps', 'deployments', deploymentBody('churn', 3));
    const deployments = h.type('apps', 'deployments');
    for (const tag of ['2', '3', '4', '5']) {
      h.store.replace(deployments, setImage(h.get('apps', 'deployments', 'churn')!, `nginx:${tag}`));
      await new Promise((r) => setTimeout(r, 15));
    }
    await eventually(() => {
      const pods = h.pods();
      const d = h.get('apps', 'deployments', 'churn')!;
      const s = d['status'] as
        { updatedReplicas?: number; availableReplicas?: number; replicas?: number } | undefined;
      return (
        pods.length === 3 &&
        pods.every(
          (p) => isPodReady(p) && status(p).containerStatuses?.[0]?.image === 'docker.io/library/nginx:5',
        ) &&
        s?.updatedReplicas === 3 &&
        s.availableReplicas === 3 &&
        s.replicas === 3
      );
    }, 'the last template rolled out');
  });

  it('empties and removes a namespace with running workloads', async () => {
    h.create('apps', 'deployments', deploymentBody('web', 2));
    h.create('apps', 'statefulsets', {
      apiVersion: 'apps/v1',
      kind: 'StatefulSet',
      metadata: { name: 'db' },
      spec: {
        replicas: 2,
        serviceName: 'db',
        selector: { matchLabels: { app: 'db' } },
        template: podTemplate({ app: 'db' }, [container()]),
      },
    });
    h.create('batch', 'jobs', {
      apiVersion: 'batch/v1',
      kind: 'Job',
      metadata: { name: 'task' },
      spec: {
        template: podTemplate({}, [container({ env: env({ KUBESIM_RUN_MS: '60000' }) })], {
          restartPolicy: 'Never',
        }),
      },
    });
    h.create('', 'pods', {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'crashy' },
      spec: { containers: [container({ env: env({ KUBESIM_BEHAVIOUR: 'crash' }) })] },
    });
    await eventually(
      () => h.pods().filter((p) => status(p).phase === 'Running').length >= 5,
      'workloads running',
    );
    h.store.delete(h.type('', 'namespaces'), undefined, h.namespace);
    await eventually(
      () => !h.store.get(h.type('', 'namespaces'), undefined, h.namespace),
      'namespace removed',
    );
    expect(h.pods()).toHaveLength(0);
  });

  it('writes nothing after stop()', async () => {
    h.create(
      'apps',
      'deployments',
      deploymentBody('t', 2, [container({ env: env({ KUBESIM_BEHAVIOUR: 'crash' }) })]),
    );
    await eventually(
      () => h.pods().some((p) => (status(p).containerStatuses?.[0]?.restartCount ?? 0) > 0),
      'crashing',
    );
    await h.stop();
    const rv = h.store.resourceVersion;
    await new Promise((r) => setTimeout(r, 300));
    expect(h.store.resourceVersion).toBe(rv);
  });
});
