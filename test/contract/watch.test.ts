/** Watch and informer semantics through client-node: events, resume, 410 Expired, selector transitions. */
import {
  PatchStrategy,
  Watch,
  makeInformer,
  setHeaderOptions,
  type V1ConfigMap,
} from '@kubernetes/client-node';
import { type TestCluster, describeSimOnly, eventually, startTestCluster } from './cluster.js';

let c: TestCluster;
beforeAll(async () => {
  c = await startTestCluster('watch', { controllers: false });
});
afterAll(async () => {
  await c.close();
});

interface Seen {
  type: string;
  name: string;
  rv: string;
  code?: number;
}

async function openWatch(query: Record<string, string | number | boolean | undefined>) {
  const seen: Seen[] = [];
  let ended: unknown = 'open';
  const path = `/api/v1/namespaces/${c.namespace}/configmaps`;
  const ctl = await new Watch(c.kc).watch(
    path,
    query,
    (type, obj: { metadata?: { name?: string; resourceVersion?: string }; code?: number }) => {
      seen.push({
        type,
        name: obj.metadata?.name ?? '',
        rv: obj.metadata?.resourceVersion ?? '',
        ...(obj.code ? { code: obj.code } : {}),
      });
    },
    (err) => {
      ended = err ?? null;
    },
  );
  return { seen, ctl, ended: () => ended };
}

const patchMerge = setHeaderOptions('Content-Type', PatchStrategy.MergePatch);

it('streams ADDED, MODIFIED and DELETED from a list resourceVersion, without a synthetic ADDED', async () => {
  await c.core.createNamespacedConfigMap({
    namespace: c.namespace,
    body: { metadata: { name: 'before', labels: { w: '1' } } },
  });
  const list = await c.core.listNamespacedConfigMap({ namespace: c.namespace, labelSelector: 'w=1' });
  const w = await openWatch({ resourceVersion: list.metadata?.resourceVersion, labelSelector: 'w=1' });
  await c.core.createNamespacedConfigMap({
    namespace: c.namespace,
    body: { metadata: { name: 'w1', labels: { w: '1' } }, data: { a: '1' } },
  });
  await c.core.patchNamespacedConfigMap(
    { name: 'w1', namespace: c.namespace, body: { data: { a: '2' } } },
    patchMerge,
  );
  await c.core.deleteNamespacedConfigMap({ name: 'w1', namespace: c.namespace });
  await eventually(async () => w.seen.length >= 3, 'three events');
  expect(w.seen.map((e) => `${e.type} ${e.name}`)).toEqual(['ADDED w1', 'MODIFIED w1', 'DELETED w1']);
  const rvs = w.seen.map((e) => Number(e.rv));
  expect(rvs).toEqual([...rvs].sort((a, b) => a - b));
  w.ctl.abort();
});

it('sends the current objects as ADDED when watching from resourceVersion 0', async () => {
  await c.core.createNamespacedConfigMap({
    namespace: c.namespace,
    body: { metadata: { name: 'zero', labels: { z: '1' } } },
  });
  const w = await openWatch({ resourceVersion: '0', labelSelector: 'z=1' });
  await eventually(async () => w.seen.length >= 1, 'initial ADDED');
  expect(w.seen[0]).toMatchObject({ type: 'ADDED', name: 'zero' });
  w.ctl.abort();
});

it('resumes from a resourceVersion and replays what was missed', async () => {
  const a = await c.core.createNamespacedConfigMap({
    namespace: c.namespace,
    body: { metadata: { name: 'r1', labels: { r: '1' } } },
  });
  await c.core.createNamespacedConfigMap({
    namespace: c.namespace,
    body: { metadata: { name: 'r2', labels: { r: '1' } } },
  });
  await c.core.patchNamespacedConfigMap(
    { name: 'r1', namespace: c.namespace, body: { data: { x: 'y' } } },
    patchMerge,
  );
  const w = await openWatch({ resourceVersion: a.metadata?.resourceVersion, labelSelector: 'r=1' });
  await eventually(async () => w.seen.length >= 2, 'replayed events');
  expect(w.seen.map((e) => `${e.type} ${e.name}`)).toEqual(['ADDED r2', 'MODIFIED r1']);
  w.ctl.abort();
});

it('turns selector transitions into ADDED and DELETED', async () => {
  const list = await c.core.listNamespacedConfigMap({ namespace: c.namespace, labelSelector: 'phase=on' });
  const w = await openWatch({ resourceVersion: list.metadata?.resourceVersion, labelSelector: 'phase=on' });
  await c.core.createNamespacedConfigMap({
    namespace: c.namespace,
    body: { metadata: { name: 'tr', labels: { phase: 'off' } } },
  });
  await c.core.patchNamespacedConfigMap(
    { name: 'tr', namespace: c.namespace, body: { metadata: { labels: { phase: 'on' } } } },
    patchMerge,
  );
  await c.core.patchNamespacedConfigMap(
    { name: 'tr', namespace: c.namespace, body: { metadata: { labels: { phase: 'off' } } } },
    patchMerge,
  );
  await eventually(async () => w.seen.length >= 2, 'transition events');
  expect(w.seen.map((e) => `${e.type} ${e.name}`)).toEqual(['ADDED tr', 'DELETED tr']);
  w.ctl.abort();
});

it('keeps an informer cache in step with the cluster', async () => {
  const path = `/api/v1/namespaces/${c.namespace}/configmaps`;
  const informer = makeInformer<V1ConfigMap>(
    c.kc,
    path,
    () => c.core.listNamespacedConfigMap({ namespace: c.namespace, labelSelector: 'inf=1' }),
    'inf=1',
  );
  const added: string[] = [];
  const deleted: string[] = [];
  informer.on('add', (o) => added.push(o.metadata?.name ?? ''));
  informer.on('delete', (o) => deleted.push(o.metadata?.name ?? ''));
  await c.core.createNamespacedConfigMap({
    namespace: c.namespace,
    body: { metadata: { name: 'i1', labels: { inf: '1' } } },
  });
  await informer.start();
  await c.core.createNamespacedConfigMap({
    namespace: c.namespace,
    body: { metadata: { name: 'i2', labels: { inf: '1' } } },
  });
  await c.core.deleteNamespacedConfigMap({ name: 'i1', namespace: c.namespace });
  await eventually(async () => deleted.includes('i1') && added.includes('i2'), 'informer events');
  expect(informer.list().map((o) => o.metadata?.name)).toEqual(['i2']);
  await informer.stop();
});

describeSimOnly('simulator only', () => {
  it('answers a resourceVersion older than the kept history with an ERROR 410 event, then closes', async () => {
    const old = await c.core.createNamespacedConfigMap({
      namespace: c.namespace,
      body: { metadata: { name: 'old' } },
    });
    await c.core.createNamespacedConfigMap({ namespace: c.namespace, body: { metadata: { name: 'newer' } } });
    const res = await fetch(`${c.sim!.httpUrl}/sim/compact`, {
      method: 'POST',
      headers: { authorization: `Bearer ${c.sim!.token}` },
    });
    expect(res.status).toBe(200);
    const w = await openWatch({ resourceVersion: old.metadata?.resourceVersion });
    await eventually(async () => w.ended() !== 'open', 'the watch to close');
    expect(w.seen).toEqual([expect.objectContaining({ type: 'ERROR', code: 410 })]);
    expect(w.ended()).toBeNull();
  });

  it('relists an informer after its watch gets 410', async () => {
    const path = `/api/v1/namespaces/${c.namespace}/configmaps`;
    const informer = makeInformer<V1ConfigMap>(
      c.kc,
      path,
      () => c.core.listNamespacedConfigMap({ namespace: c.namespace, labelSelector: 'gone=1' }),
      'gone=1',
    );
    await informer.start();
    await fetch(`${c.sim!.httpUrl}/sim/compact`, {
      method: 'POST',
      headers: { authorization: `Bearer ${c.sim!.token}` },
    });
    // Cutting the stream makes the informer re-watch from its (now compacted) resourceVersion: 410, relist.
    c.sim!.faults.cutWatches();
    await c.core.createNamespacedConfigMap({
      namespace: c.namespace,
      body: { metadata: { name: 'after-410', labels: { gone: '1' } } },
    });
    await eventually(
      async () => informer.list().some((o) => o.metadata?.name === 'after-410'),
      'the informer to relist',
    );
    await informer.stop();
  });

  it('sends BOOKMARK events when asked', async () => {
    const { startSimulator } = await import('@opi/kube-sim');
    const sim = await startSimulator({ controllers: false, bookmarkIntervalMs: 50 });
    const res = await fetch(
      `${sim.httpUrl}/api/v1/namespaces/default/configmaps?watch=true&allowWatchBookmarks=true&resourceVersion=1`,
      {
        headers: { authorization: `Bearer ${sim.token}` },
      },
    );
    const reader = res.body!.getReader();
    const { value } = await reader.read();
    const line = JSON.parse(new TextDecoder().decode(value as Uint8Array).split('\n')[0]!) as {
      type: string;
      object: { kind: string; metadata: { resourceVersion: string } };
    };
    expect(line.type).toBe('BOOKMARK');
    expect(line.object.kind).toBe('ConfigMap');
    expect(Number(line.object.metadata.resourceVersion)).toBeGreaterThan(0);
    await reader.cancel();
    await sim.close();
  });

  it('ends a watch after timeoutSeconds', async () => {
    const w = await openWatch({ timeoutSeconds: 1 });
    await eventually(async () => w.ended() !== 'open', 'the watch to time out', 5000);
    expect(w.ended()).toBeNull();
  });
});
