/** Scale (simulator only): 100,000 objects, a paginated list of 10,000 Deployments, 50 concurrent watchers. */
import { Watch } from '@kubernetes/client-node';
import type { KubeObject } from '@opi/kube-sim';
import {
  type TestCluster,
  deploymentBody,
  describeSimOnly,
  eventually,
  startTestCluster,
} from './cluster.js';

let c: TestCluster;
beforeAll(async () => {
  c = await startTestCluster('scale', { controllers: false });
});
afterAll(async () => {
  await c.close();
});

describeSimOnly('at scale', () => {
  it('holds 100,000 objects, pages through 10,000 Deployments and feeds 50 watchers', async () => {
    const store = c.sim!.store;
    const deployments = store.registry.get('apps', 'deployments');
    const configmaps = store.registry.get('', 'configmaps');
    for (let i = 0; i < 10_000; i++) {
      const body = deploymentBody(`d-${String(i).padStart(5, '0')}`, 0);
      store.create(deployments, {
        apiVersion: 'apps/v1',
        kind: 'Deployment',
        ...body,
        metadata: { ...body.metadata, namespace: c.namespace },
      } as unknown as KubeObject);
    }
    for (let i = 0; i < 90_000; i++) {
      store.create(configmaps, {
        apiVersion: 'v1',
        kind: 'ConfigMap',
        metadata: { name: `cm-${i}`, namespace: c.namespace, labels: { i: String(i % 10) } },
        data: { k: String(i) },
      } as unknown as KubeObject);
    }
    expect(store.count()).toBeGreaterThanOrEqual(100_000);

    const watchers = await Promise.all(
      Array.from({ length: 50 }, async () => {
        const seen: string[] = [];
        const ctl = await new Watch(c.kc).watch(
          `/apis/apps/v1/namespaces/${c.namespace}/deployments`,
          { resourceVersion: store.resourceVersion },
          (type, obj: { metadata?: { name?: string } }) => seen.push(`${type} ${obj.metadata?.name ?? ''}`),
          () => undefined,
        );
        return { seen, ctl };
      }),
    );

    const names = new Set<string>();
    let token: string | undefined;
    let pages = 0;
    do {
      const page = await c.apps.listNamespacedDeployment({
        namespace: c.namespace,
        limit: 500,
        _continue: token,
      });
      for (const d of page.items) names.add(d.metadata?.name ?? '');
      token = page.metadata?._continue;
      pages++;
    } while (token);
    expect(names.size).toBe(10_000);
    expect(pages).toBe(20);

    const selected = await c.core.listNamespacedConfigMap({
      namespace: c.namespace,
      labelSelector: 'i=3',
      limit: 1000,
    });
    expect(selected.items).toHaveLength(1000);
    expect(selected.metadata?._continue).toBeDefined();

    await c.apps.createNamespacedDeployment({ namespace: c.namespace, body: deploymentBody('late', 0) });
    await eventually(
      async () => watchers.every((w) => w.seen.includes('ADDED late')),
      'every watcher to see the new Deployment',
    );
    for (const w of watchers) w.ctl.abort();
  }, 120_000);
});
