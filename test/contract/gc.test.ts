/** ownerReferences, propagation policies, finalizers and namespace deletion, through client-node. */
import { PatchStrategy, setHeaderOptions, type V1OwnerReference } from '@kubernetes/client-node';
import { type TestCluster, eventually, startTestCluster, statusOf } from './cluster.js';

let c: TestCluster;
beforeAll(async () => {
  c = await startTestCluster('gc', { controllers: false });
});
afterAll(async () => {
  await c.close();
});

const merge = setHeaderOptions('Content-Type', PatchStrategy.MergePatch);

async function owner(name: string): Promise<V1OwnerReference> {
  const o = await c.core.createNamespacedConfigMap({ namespace: c.namespace, body: { metadata: { name } } });
  return {
    apiVersion: 'v1',
    kind: 'ConfigMap',
    name,
    uid: o.metadata!.uid!,
    controller: true,
    blockOwnerDeletion: true,
  };
}

async function dependent(name: string, ref: V1OwnerReference, finalizers?: string[]) {
  return c.core.createNamespacedConfigMap({
    namespace: c.namespace,
    body: { metadata: { name, ownerReferences: [ref], ...(finalizers ? { finalizers } : {}) } },
  });
}

async function exists(name: string): Promise<boolean> {
  try {
    await c.core.readNamespacedConfigMap({ name, namespace: c.namespace });
    return true;
  } catch (e) {
    if (statusOf(e).code === 404) return false;
    throw e;
  }
}

it('Background: the owner goes at once, then its dependents', async () => {
  const ref = await owner('bg-owner');
  await dependent('bg-dep', ref);
  await c.core.deleteNamespacedConfigMap({
    name: 'bg-owner',
    namespace: c.namespace,
    propagationPolicy: 'Background',
  });
  expect(await exists('bg-owner')).toBe(false);
  await eventually(async () => !(await exists('bg-dep')), 'the dependent to be collected');
});

it('Foreground: the owner waits with a deletionTimestamp until blocking dependents are gone', async () => {
  const ref = await owner('fg-owner');
  // A finalizer holds the dependent, so the owner's wait is visible.
  await dependent('fg-dep', ref, ['example.com/hold']);
  // client-node types the DELETE answer as V1Status and drops the object's fields: read it back.
  await c.core.deleteNamespacedConfigMap({
    name: 'fg-owner',
    namespace: c.namespace,
    propagationPolicy: 'Foreground',
  });
  const deleted = await c.core.readNamespacedConfigMap({ name: 'fg-owner', namespace: c.namespace });
  expect(deleted.metadata?.deletionTimestamp).toBeInstanceOf(Date);
  expect(deleted.metadata?.finalizers).toContain('foregroundDeletion');
  await eventually(async () => {
    const dep = await c.core.readNamespacedConfigMap({ name: 'fg-dep', namespace: c.namespace });
    return dep.metadata?.deletionTimestamp !== undefined;
  }, 'the dependent to be marked for deletion');
  expect(await exists('fg-owner')).toBe(true);
  await c.core.patchNamespacedConfigMap(
    { name: 'fg-dep', namespace: c.namespace, body: { metadata: { finalizers: null } } },
    merge,
  );
  await eventually(
    async () => !(await exists('fg-dep')) && !(await exists('fg-owner')),
    'owner and dependent to go',
  );
});

it('Orphan: dependents stay and lose the owner reference', async () => {
  const ref = await owner('or-owner');
  await dependent('or-dep', ref);
  await c.core.deleteNamespacedConfigMap({
    name: 'or-owner',
    namespace: c.namespace,
    propagationPolicy: 'Orphan',
  });
  await eventually(async () => !(await exists('or-owner')), 'the owner to go');
  const dep = await eventually(async () => {
    const d = await c.core.readNamespacedConfigMap({ name: 'or-dep', namespace: c.namespace });
    return d.metadata?.ownerReferences === undefined || d.metadata.ownerReferences.length === 0
      ? d
      : undefined;
  }, 'the reference to be removed');
  expect(dep.metadata?.name).toBe('or-dep');
});

it('batch/v1 Jobs orphan their dependents when no policy is given, and collect them with Background', async () => {
  const mkJob = async (name: string) => {
    const job = await c.batch.createNamespacedJob({
      namespace: c.namespace,
      body: {
        metadata: { name },
        // suspend keeps the Job controller (on a real cluster) from creating pods of its own.
        spec: {
          suspend: true,
          template: { spec: { restartPolicy: 'Never', containers: [{ name: 'main', image: 'busybox' }] } },
        },
      },
    });
    const ref = {
      apiVersion: 'batch/v1',
      kind: 'Job',
      name,
      uid: job.metadata!.uid!,
      controller: true,
      blockOwnerDeletion: true,
    };
    await dependent(`${name}-dep`, ref);
  };
  await mkJob('job-default');
  await c.batch.deleteNamespacedJob({ name: 'job-default', namespace: c.namespace });
  await eventually(async () => {
    const d = await c.core.readNamespacedConfigMap({ name: 'job-default-dep', namespace: c.namespace });
    return !d.metadata?.ownerReferences?.length;
  }, 'the dependent to be orphaned');
  await mkJob('job-bg');
  await c.batch.deleteNamespacedJob({
    name: 'job-bg',
    namespace: c.namespace,
    propagationPolicy: 'Background',
  });
  await eventually(async () => !(await exists('job-bg-dep')), 'the dependent to be collected');
});

it('keeps an object with finalizers until they are removed', async () => {
  await c.core.createNamespacedConfigMap({
    namespace: c.namespace,
    body: { metadata: { name: 'fin', finalizers: ['example.com/a'] } },
  });
  await c.core.deleteNamespacedConfigMap({ name: 'fin', namespace: c.namespace });
  const held = await c.core.readNamespacedConfigMap({ name: 'fin', namespace: c.namespace });
  expect(held.metadata?.deletionTimestamp).toBeInstanceOf(Date);
  await c.core.patchNamespacedConfigMap(
    { name: 'fin', namespace: c.namespace, body: { metadata: { finalizers: [] } } },
    merge,
  );
  await eventually(async () => !(await exists('fin')), 'the object to go');
});

it('collects an object whose owner does not exist', async () => {
  await dependent('dangling', {
    apiVersion: 'v1',
    kind: 'ConfigMap',
    name: 'ghost',
    uid: '00000000-0000-0000-0000-000000000001',
  });
  await eventually(async () => !(await exists('dangling')), 'the dangling object to be collected');
});

it('checks delete preconditions', async () => {
  const o = await c.core.createNamespacedConfigMap({
    namespace: c.namespace,
    body: { metadata: { name: 'pre' } },
  });
  await expect(
    c.core.deleteNamespacedConfigMap({
      name: 'pre',
      namespace: c.namespace,
      body: { preconditions: { uid: 'not-the-uid' } },
    }),
  ).rejects.toMatchObject({ code: 409 });
  await c.core.deleteNamespacedConfigMap({
    name: 'pre',
    namespace: c.namespace,
    body: { preconditions: { uid: o.metadata!.uid! } },
  });
  expect(await exists('pre')).toBe(false);
});

it('empties a deleted namespace, then removes it', async () => {
  const ns = `${c.namespace}-x`;
  await c.core.createNamespace({ body: { metadata: { name: ns } } });
  await c.core.createNamespacedConfigMap({ namespace: ns, body: { metadata: { name: 'inside' } } });
  await c.core.deleteNamespace({ name: ns });
  await eventually(
    async () => {
      try {
        await c.core.readNamespace({ name: ns });
        return false;
      } catch (e) {
        return statusOf(e).code === 404;
      }
    },
    'the namespace to go',
    60_000,
  );
});
