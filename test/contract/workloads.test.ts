/**
 * Workload lifecycles through client-node: Deployments roll out and become ready, StatefulSets keep
 * ordinals, Jobs complete or fail, pods carry the status fields and events a real cluster fills; and
 * (simulator only) the failure modes a test can ask for.
 *
 * Job failure asks both for the simulator's convention (KUBESIM_BEHAVIOUR=fail) and for the fake kubelet's
 * annotation of the realk8s rig (fake-kubelet/fail; docs/testing.md), so the same case runs on either cluster.
 */
import { PatchStrategy, setHeaderOptions, type V1Pod } from '@kubernetes/client-node';
import {
  type TestCluster,
  deploymentBody,
  describeSimOnly,
  eventually,
  startTestCluster,
} from './cluster.js';

let c: TestCluster;
beforeAll(async () => {
  c = await startTestCluster('workloads');
});
afterAll(async () => {
  await c.close();
});

const merge = setHeaderOptions('Content-Type', PatchStrategy.MergePatch);
const TIMEOUT = 60_000;

async function podsOf(selector: string): Promise<V1Pod[]> {
  return (await c.core.listNamespacedPod({ namespace: c.namespace, labelSelector: selector })).items;
}

function runningReady(p: V1Pod): boolean {
  return (
    p.status?.phase === 'Running' &&
    !p.metadata?.deletionTimestamp &&
    (p.status.conditions ?? []).some((x) => x.type === 'Ready' && x.status === 'True')
  );
}

async function rolledOut(name: string, replicas: number) {
  return eventually(
    async () => {
      const d = await c.apps.readNamespacedDeployment({ name, namespace: c.namespace });
      const s = d.status;
      const done =
        (s?.observedGeneration ?? 0) >= (d.metadata?.generation ?? 1) &&
        (s?.updatedReplicas ?? 0) === replicas &&
        (s?.replicas ?? 0) === replicas &&
        (s?.availableReplicas ?? 0) === replicas &&
        (s?.readyReplicas ?? 0) === replicas;
      return done ? d : undefined;
    },
    `deployment ${name} to roll out ${replicas} replicas`,
    TIMEOUT,
  );
}

it('rolls a Deployment out to ready pods through a ReplicaSet', async () => {
  await c.apps.createNamespacedDeployment({ namespace: c.namespace, body: deploymentBody('web', 3) });
  const d = await rolledOut('web', 3);
  expect(d.status?.conditions?.find((x) => x.type === 'Available')?.status).toBe('True');
  const rs = (await c.apps.listNamespacedReplicaSet({ namespace: c.namespace, labelSelector: 'app=web' }))
    .items;
  expect(rs).toHaveLength(1);
  expect(rs[0]?.metadata?.ownerReferences?.[0]).toMatchObject({
    kind: 'Deployment',
    name: 'web',
    controller: true,
  });
  expect(rs[0]?.metadata?.labels?.['pod-template-hash']).toBeDefined();
  const pods = await eventually(
    async () => {
      const p = await podsOf('app=web');
      return p.length === 3 && p.every(runningReady) ? p : undefined;
    },
    'three ready pods',
    TIMEOUT,
  );
  for (const p of pods) {
    expect(p.metadata?.ownerReferences?.[0]?.kind).toBe('ReplicaSet');
    expect(p.spec?.nodeName).toBeTruthy();
    expect(p.status?.podIP).toBeTruthy();
    expect(p.status?.startTime).toBeInstanceOf(Date);
    const cs = p.status?.containerStatuses?.[0];
    expect(cs).toMatchObject({ name: 'app', ready: true, restartCount: 0 });
    expect(cs?.state?.running?.startedAt).toBeInstanceOf(Date);
  }
});

it('replaces every pod on a template change and scales down', async () => {
  await c.apps.createNamespacedDeployment({ namespace: c.namespace, body: deploymentBody('roll', 2) });
  await rolledOut('roll', 2);
  const before = new Set((await podsOf('app=roll')).map((p) => p.metadata?.name));
  await c.apps.patchNamespacedDeployment(
    {
      name: 'roll',
      namespace: c.namespace,
      body: { spec: { template: { metadata: { annotations: { rev: '2' } } } } },
    },
    merge,
  );
  await rolledOut('roll', 2);
  const after = await eventually(
    async () => {
      const p = (await podsOf('app=roll')).filter((x) => !x.metadata?.deletionTimestamp);
      return p.length === 2 && p.every((x) => !before.has(x.metadata?.name) && runningReady(x))
        ? p
        : undefined;
    },
    'new pods only',
    TIMEOUT,
  );
  expect(after).toHaveLength(2);
  await c.apps.patchNamespacedDeployment(
    { name: 'roll', namespace: c.namespace, body: { spec: { replicas: 1 } } },
    merge,
  );
  await rolledOut('roll', 1);
  await eventually(async () => (await podsOf('app=roll')).length === 1, 'one pod left', TIMEOUT);
});

it('gives StatefulSet pods stable ordinal names', async () => {
  await c.apps.createNamespacedStatefulSet({
    namespace: c.namespace,
    body: {
      metadata: { name: 'db' },
      spec: {
        replicas: 3,
        serviceName: 'db',
        selector: { matchLabels: { app: 'db' } },
        template: {
          metadata: { labels: { app: 'db' } },
          spec: { containers: [{ name: 'db', image: 'registry.example/db:1' }] },
        },
      },
    },
  });
  await eventually(
    async () => {
      const s = await c.apps.readNamespacedStatefulSet({ name: 'db', namespace: c.namespace });
      return s.status?.readyReplicas === 3;
    },
    'three ready replicas',
    TIMEOUT,
  );
  const names = (await podsOf('app=db')).map((p) => p.metadata?.name).sort();
  expect(names).toEqual(['db-0', 'db-1', 'db-2']);
});

function jobBody(name: string, fail: boolean) {
  return {
    metadata: { name },
    spec: {
      backoffLimit: 0,
      template: {
        metadata: {
          annotations: {
            'fake-kubelet/complete-after-ms': '500',
            ...(fail ? { 'fake-kubelet/fail': 'true' } : {}),
          },
        },
        spec: {
          restartPolicy: 'Never',
          containers: [
            {
              name: 'main',
              image: 'registry.example/task:1',
              env: [
                { name: 'KUBESIM_RUN_MS', value: '300' },
                ...(fail ? [{ name: 'KUBESIM_BEHAVIOUR', value: 'fail' }] : []),
              ],
            },
          ],
        },
      },
    },
  };
}

it('runs a Job to completion', async () => {
  await c.batch.createNamespacedJob({ namespace: c.namespace, body: jobBody('ok', false) });
  const job = await eventually(
    async () => {
      const j = await c.batch.readNamespacedJob({ name: 'ok', namespace: c.namespace });
      return j.status?.conditions?.some((x) => x.type === 'Complete' && x.status === 'True') ? j : undefined;
    },
    'the job to complete',
    TIMEOUT,
  );
  expect(job.status?.succeeded).toBe(1);
  expect(job.status?.completionTime).toBeInstanceOf(Date);
  const pods = await podsOf('job-name=ok');
  expect(pods[0]?.status?.phase).toBe('Succeeded');
  expect(pods[0]?.status?.containerStatuses?.[0]?.state?.terminated).toMatchObject({
    exitCode: 0,
    reason: 'Completed',
  });
});

it('fails a Job whose pod fails when backoffLimit is 0', async () => {
  await c.batch.createNamespacedJob({ namespace: c.namespace, body: jobBody('bad', true) });
  const job = await eventually(
    async () => {
      const j = await c.batch.readNamespacedJob({ name: 'bad', namespace: c.namespace });
      return j.status?.conditions?.some((x) => x.type === 'Failed' && x.status === 'True') ? j : undefined;
    },
    'the job to fail',
    TIMEOUT,
  );
  expect(job.status?.failed).toBe(1);
  expect(job.status?.conditions?.find((x) => x.type === 'Failed')?.reason).toBe('BackoffLimitExceeded');
  const pods = await podsOf('job-name=bad');
  expect(pods[0]?.status?.phase).toBe('Failed');
  expect(pods[0]?.status?.containerStatuses?.[0]?.state?.terminated?.exitCode).toBe(1);
});

it('records events for pods', async () => {
  const pod = (await podsOf('app=web'))[0]!;
  const events = await eventually(
    async () => {
      const ev = await c.core.listNamespacedEvent({
        namespace: c.namespace,
        fieldSelector: `involvedObject.name=${pod.metadata?.name ?? ''}`,
      });
      const reasons = ev.items.map((e) => e.reason);
      return reasons.includes('Scheduled') && reasons.includes('Started') ? ev.items : undefined;
    },
    'Scheduled and Started events',
    TIMEOUT,
  );
  expect(events.every((e) => e.involvedObject.kind === 'Pod')).toBe(true);
});

describeSimOnly('failures a workload asks for (simulator only)', () => {
  const withEnv = (name: string, env: Record<string, string>, image?: string, memory?: string) => {
    const body = deploymentBody(
      name,
      1,
      image,
      Object.entries(env).map(([k, v]) => ({ name: k, value: v })),
    );
    if (memory) body.spec.template.spec.containers[0]!.resources = { requests: { memory, cpu: '10m' } };
    return body;
  };
  const firstContainer = async (app: string) =>
    (await podsOf(`app=${app}`))[0]?.status?.containerStatuses?.[0];

  it('crash-loops with a rising restartCount and CrashLoopBackOff', async () => {
    await c.apps.createNamespacedDeployment({
      namespace: c.namespace,
      body: withEnv('crasher', { KUBESIM_BEHAVIOUR: 'crash', KUBESIM_EXIT_CODE: '3' }),
    });
    const cs = await eventually(
      async () => {
        const s = await firstContainer('crasher');
        return (s?.restartCount ?? 0) >= 2 && s?.state?.waiting?.reason === 'CrashLoopBackOff'
          ? s
          : undefined;
      },
      'CrashLoopBackOff with restarts',
      TIMEOUT,
    );
    expect(cs.lastState?.terminated).toMatchObject({ exitCode: 3, reason: 'Error' });
    expect(cs.ready).toBe(false);
    const pod = (await podsOf('app=crasher'))[0]!;
    expect(pod.status?.phase).toBe('Running');
    const ev = await c.core.listNamespacedEvent({
      namespace: c.namespace,
      fieldSelector: `involvedObject.name=${pod.metadata?.name ?? ''}`,
    });
    expect(ev.items.map((e) => e.reason)).toContain('BackOff');
  });

  it('reports OOMKilled with exit code 137', async () => {
    await c.apps.createNamespacedDeployment({
      namespace: c.namespace,
      body: withEnv('oomer', { KUBESIM_BEHAVIOUR: 'oom' }),
    });
    const cs = await eventually(
      async () => {
        const s = await firstContainer('oomer');
        return s?.lastState?.terminated?.reason === 'OOMKilled' ? s : undefined;
      },
      'OOMKilled',
      TIMEOUT,
    );
    expect(cs.lastState?.terminated?.exitCode).toBe(137);
  });

  it('fails to pull an image: ErrImagePull, then ImagePullBackOff', async () => {
    await c.apps.createNamespacedDeployment({
      namespace: c.namespace,
      body: withEnv('nopull', {}, 'registry.example/kubesim-pull-error:1'),
    });
    const seen = new Set<string>();
    await eventually(
      async () => {
        const reason = (await firstContainer('nopull'))?.state?.waiting?.reason;
        if (reason) seen.add(reason);
        return seen.has('ImagePullBackOff');
      },
      'ImagePullBackOff',
      TIMEOUT,
    );
    const pod = (await podsOf('app=nopull'))[0]!;
    expect(pod.status?.phase).toBe('Pending');
  });

  it('leaves a pod that fits no node Pending with FailedScheduling', async () => {
    await c.apps.createNamespacedDeployment({
      namespace: c.namespace,
      body: withEnv('huge', {}, undefined, '1000Gi'),
    });
    const pod = await eventually(
      async () => {
        const p = (await podsOf('app=huge'))[0];
        return p?.status?.conditions?.some((x) => x.type === 'PodScheduled' && x.status === 'False')
          ? p
          : undefined;
      },
      'an unschedulable pod',
      TIMEOUT,
    );
    expect(pod.status?.phase).toBe('Pending');
    const ev = await eventually(
      async () => {
        const e = await c.core.listNamespacedEvent({
          namespace: c.namespace,
          fieldSelector: `involvedObject.name=${pod.metadata?.name ?? ''},reason=FailedScheduling`,
        });
        return e.items[0];
      },
      'a FailedScheduling event',
      TIMEOUT,
    );
    expect(ev.message).toContain('Insufficient memory');
    expect(ev.type).toBe('Warning');
  });

  it('carries a termination message and serves pod logs', async () => {
    await c.batch.createNamespacedJob({
      namespace: c.namespace,
      body: {
        metadata: { name: 'msg' },
        spec: {
          backoffLimit: 0,
          template: {
            spec: {
              restartPolicy: 'Never',
              containers: [
                {
                  name: 'main',
                  image: 'registry.example/stager:1',
                  env: [
                    { name: 'KUBESIM_RUN_MS', value: '100' },
                    { name: 'KUBESIM_TERMINATION_MESSAGE', value: '{"result":"ok"}' },
                    { name: 'KUBESIM_LOG', value: 'line one\nline two' },
                  ],
                },
              ],
            },
          },
        },
      },
    });
    const pod = await eventually(
      async () => {
        const p = (await podsOf('job-name=msg'))[0];
        return p?.status?.phase === 'Succeeded' ? p : undefined;
      },
      'the job pod to finish',
      TIMEOUT,
    );
    expect(pod.status?.containerStatuses?.[0]?.state?.terminated?.message).toBe('{"result":"ok"}');
    const log = await c.core.readNamespacedPodLog({
      name: pod.metadata!.name!,
      namespace: c.namespace,
      container: 'main',
    });
    expect(log).toContain('line two');
  });
});
