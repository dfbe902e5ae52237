/**
 * Pods a ResourceQuota refuses, as the cluster tells it: the API server's admission wording for a pod
 * create, a ReplicaSet's and its Deployment's `ReplicaFailure` condition (set while pods are refused,
 * dropped once they are made), and the `FailedCreate` Warning events of the StatefulSet and Job
 * controllers, which set no condition. The service reads these to show why an app's instances are
 * missing (decision 12); this suite holds the simulator to what kube-apiserver and kube-controller-manager
 * do. The `must specify` wording gained ` for: <containers>` in 1.24, so both forms are taken.
 */
import { randomBytes } from 'node:crypto';
import type { CoreV1Event, V1ResourceQuota } from '@kubernetes/client-node';
import { type TestCluster, deploymentBody, eventually, expectStatus, startTestCluster } from './cluster.js';

let c: TestCluster;
const namespaces: string[] = [];
beforeAll(async () => {
  c = await startTestCluster('quota');
});
afterAll(async () => {
  for (const name of namespaces) await c.core.deleteNamespace({ name }).catch(() => undefined);
  await c.close();
});

const TIMEOUT = 60_000;

/** A namespace of the case's own, since a quota holds for every pod of its namespace. */
async function namespaceWithQuota(hard: Record<string, string>): Promise<string> {
  const namespace = `quota-${randomBytes(3).toString('hex')}`;
  await c.core.createNamespace({ body: { metadata: { name: namespace } } });
  namespaces.push(namespace);
  await c.core.createNamespacedResourceQuota({
    namespace,
    body: { metadata: { name: 'compute' }, spec: { hard } },
  });
  await quotaCounted(namespace, Object.keys(hard));
  return namespace;
}

/** Admission refuses every pod with "status unknown for quota" until the quota controller has counted. */
function quotaCounted(namespace: string, resources: string[]): Promise<V1ResourceQuota> {
  return eventually(
    async () => {
      const q = await c.core.readNamespacedResourceQuota({ name: 'compute', namespace });
      const hard = q.status?.hard ?? {};
      const used = q.status?.used ?? {};
      return resources.every((r) => r in hard && r in used) ? q : undefined;
    },
    `quota in ${namespace} to be counted`,
    TIMEOUT,
  );
}

function podBody(name: string, requests?: Record<string, string>) {
  return {
    metadata: { name },
    spec: {
      containers: [
        { name: 'app', image: 'registry.example/app:1', ...(requests ? { resources: { requests } } : {}) },
      ],
    },
  };
}

async function failedCreateEvents(namespace: string, kind: string, name: string): Promise<CoreV1Event[]> {
  const list = await c.core.listNamespacedEvent({
    namespace,
    fieldSelector: `involvedObject.kind=${kind},involvedObject.name=${name},reason=FailedCreate`,
  });
  return list.items;
}

const MUST_SPECIFY_CPU = /failed quota: compute: must specify requests\.cpu(?: for: app)?$/;

it('refuses a pod over the pods count, and one without the requests a quota constrains, in the API server words', async () => {
  const namespace = await namespaceWithQuota({ pods: '1', 'requests.cpu': '1' });
  await c.core.createNamespacedPod({ namespace, body: podBody('first', { cpu: '100m' }) });
  await quotaCounted(namespace, ['pods']);
  await eventually(
    async () => {
      const q = await c.core.readNamespacedResourceQuota({ name: 'compute', namespace });
      return q.status?.used?.['pods'] === '1' ? q : undefined;
    },
    'the first pod to be counted',
    TIMEOUT,
  );

  const over = await expectStatus(
    c.core.createNamespacedPod({ namespace, body: podBody('second', { cpu: '100m' }) }),
    403,
    'Forbidden',
  );
  expect(over.message).toBe(
    'pods "second" is forbidden: exceeded quota: compute, requested: pods=1, used: pods=1, limited: pods=1',
  );

  const unspecified = await expectStatus(
    c.core.createNamespacedPod({ namespace, body: podBody('third') }),
    403,
    'Forbidden',
  );
  expect(unspecified.message).toMatch(/^pods "third" is forbidden: /);
  expect(unspecified.message).toMatch(MUST_SPECIFY_CPU);
});

it("sets a ReplicaSet's and its Deployment's ReplicaFailure while pods are refused, and drops both once they are made", async () => {
  const namespace = await namespaceWithQuota({ pods: '1' });
  await c.apps.createNamespacedDeployment({ namespace, body: deploymentBody('web', 2) });

  const refused = await eventually(
    async () => {
      const d = await c.apps.readNamespacedDeployment({ name: 'web', namespace });
      const cond = d.status?.conditions?.find((x) => x.type === 'ReplicaFailure');
      return cond?.status === 'True' ? cond : undefined;
    },
    "the Deployment's ReplicaFailure",
    TIMEOUT,
  );
  expect(refused.reason).toBe('FailedCreate');
  expect(refused.message).toMatch(
    /^pods "web-[a-z0-9]+-[a-z0-9]{5}" is forbidden: exceeded quota: compute, requested: pods=1, used: pods=1, limited: pods=1$/,
  );

  const [rs] = (await c.apps.listNamespacedReplicaSet({ namespace, labelSelector: 'app=web' })).items;
  const rsCondition = rs?.status?.conditions?.find((x) => x.type === 'ReplicaFailure');
  expect(rsCondition).toMatchObject({ status: 'True', reason: 'FailedCreate' });
  expect(rsCondition?.message).toMatch(/is forbidden: exceeded quota: compute/);
  expect(rs?.status?.replicas).toBe(1);
  const rsEvents = await eventually(
    async () => {
      const events = await failedCreateEvents(namespace, 'ReplicaSet', rs?.metadata?.name ?? '');
      return events.length > 0 ? events : undefined;
    },
    "the ReplicaSet's FailedCreate event",
    TIMEOUT,
  );
  expect(rsEvents[0]).toMatchObject({ type: 'Warning', source: { component: 'replicaset-controller' } });
  expect(rsEvents[0]?.message).toMatch(/^Error creating: pods "web-[a-z0-9-]+" is forbidden: exceeded quota/);

  await c.core.patchNamespacedResourceQuota({
    name: 'compute',
    namespace,
    body: [{ op: 'replace', path: '/spec/hard/pods', value: '3' }],
  });
  await eventually(
    async () => {
      const d = await c.apps.readNamespacedDeployment({ name: 'web', namespace });
      const [set] = (await c.apps.listNamespacedReplicaSet({ namespace, labelSelector: 'app=web' })).items;
      const cleared =
        !d.status?.conditions?.some((x) => x.type === 'ReplicaFailure') &&
        !set?.status?.conditions?.some((x) => x.type === 'ReplicaFailure');
      return cleared && d.status?.replicas === 2 ? d : undefined;
    },
    'both pods made and ReplicaFailure dropped',
    TIMEOUT,
  );
});

it('says a refused StatefulSet pod only in FailedCreate events, with no condition, and makes it once the quota allows', async () => {
  const namespace = await namespaceWithQuota({ pods: '5', 'requests.cpu': '1' });
  await c.apps.createNamespacedStatefulSet({
    namespace,
    body: {
      metadata: { name: 'sts' },
      spec: {
        replicas: 1,
        serviceName: 'sts',
        selector: { matchLabels: { app: 'sts' } },
        template: {
          metadata: { labels: { app: 'sts' } },
          spec: { containers: [{ name: 'app', image: 'registry.example/app:1' }] },
        },
      },
    },
  });
  const events = await eventually(
    async () => {
      const found = await failedCreateEvents(namespace, 'StatefulSet', 'sts');
      return found.length > 0 ? found : undefined;
    },
    "the StatefulSet's FailedCreate event",
    TIMEOUT,
  );
  expect(events[0]).toMatchObject({
    type: 'Warning',
    reason: 'FailedCreate',
    source: { component: 'statefulset-controller' },
    involvedObject: { kind: 'StatefulSet', name: 'sts', namespace },
  });
  expect(events[0]?.message).toMatch(
    /^create Pod sts-0 in StatefulSet sts failed error: pods "sts-0" is forbidden: /,
  );
  expect(events[0]?.message).toMatch(MUST_SPECIFY_CPU);
  const sts = await c.apps.readNamespacedStatefulSet({ name: 'sts', namespace });
  expect(sts.status?.replicas ?? 0).toBe(0);
  expect(sts.status?.conditions ?? []).toEqual([]);

  await c.core.deleteNamespacedResourceQuota({ name: 'compute', namespace });
  await eventually(
    async () => {
      const pods = (await c.core.listNamespacedPod({ namespace, labelSelector: 'app=sts' })).items;
      return pods.some((p) => p.metadata?.name === 'sts-0') ? pods : undefined;
    },
    'sts-0 made once the quota is gone',
    TIMEOUT,
  );
});

it("says a refused Job pod in the Job controller's FailedCreate events", async () => {
  const namespace = await namespaceWithQuota({ pods: '0' });
  await c.batch.createNamespacedJob({
    namespace,
    body: {
      metadata: { name: 'job' },
      spec: {
        backoffLimit: 0,
        template: {
          spec: {
            restartPolicy: 'Never',
            containers: [{ name: 'task', image: 'registry.example/app:1' }],
          },
        },
      },
    },
  });
  const events = await eventually(
    async () => {
      const found = await failedCreateEvents(namespace, 'Job', 'job');
      return found.length > 0 ? found : undefined;
    },
    "the Job's FailedCreate event",
    TIMEOUT,
  );
  expect(events[0]).toMatchObject({ type: 'Warning', source: { component: 'job-controller' } });
  expect(events[0]?.message).toMatch(
    /^Error creating: pods "job-[a-z0-9]{5}" is forbidden: exceeded quota: compute, requested: pods=1, used: pods=0, limited: pods=0$/,
  );
});
