import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import type { KubeObject } from '../types.js';
import {
  type Harness,
  container,
  deploymentBody,
  eventually,
  podTemplate,
  startHarness,
} from './test-harness.js';

interface Condition {
  type: string;
  status: string;
  reason?: string;
  message?: string;
}

const conditions = (o: KubeObject | undefined): Condition[] =>
  ((o?.['status'] as { conditions?: Condition[] } | undefined)?.conditions ?? []).slice();
const failure = (o: KubeObject | undefined) => conditions(o).find((c) => c.type === 'ReplicaFailure');

const QUOTA_MESSAGE = 'exceeded quota: compute, requested: pods=1, used: pods=1, limited: pods=1';

describe('pods refused by a ResourceQuota', () => {
  let h: Harness;
  const setQuota = (hard: Record<string, string>) => {
    const t = h.type('', 'resourcequotas');
    const current = h.get('', 'resourcequotas', 'compute');
    if (current) h.store.replace(t, { ...current, spec: { hard } });
    else
      h.create('', 'resourcequotas', {
        apiVersion: 'v1',
        kind: 'ResourceQuota',
        metadata: { name: 'compute' },
        spec: { hard },
      });
  };
  const warnings = (kind: string) =>
    h
      .events()
      .filter(
        (e) => e['reason'] === 'FailedCreate' && (e['involvedObject'] as { kind?: string }).kind === kind,
      );

  beforeEach(async () => {
    h = await startHarness();
    setQuota({ pods: '1' });
  });
  afterEach(async () => {
    await h.stop();
  });

  it('sets ReplicaFailure on the ReplicaSet and the Deployment, with FailedCreate events, and drops it once the quota is raised', async () => {
    h.create('apps', 'deployments', deploymentBody('web', 3));
    const rs = await eventually(
      () => h.store.all(h.type('apps', 'replicasets'), h.namespace)[0],
      'a ReplicaSet',
    );
    const rsName = rs.metadata.name;
    // Each try's pod gets a name of its own from generateName, which the admission names.
    const refused = new RegExp(`^pods "${rsName}-[a-z0-9]{5}" is forbidden: ${QUOTA_MESSAGE}$`);
    await eventually(
      () => refused.test(failure(h.get('apps', 'replicasets', rsName))?.message ?? ''),
      'RS condition',
    );
    expect(failure(h.get('apps', 'replicasets', rsName))).toMatchObject({
      status: 'True',
      reason: 'FailedCreate',
    });
    await eventually(
      () => refused.test(failure(h.get('apps', 'deployments', 'web'))?.message ?? ''),
      'Deployment condition',
    );
    expect(failure(h.get('apps', 'deployments', 'web'))).toMatchObject({
      status: 'True',
      reason: 'FailedCreate',
    });
    const [event] = warnings('ReplicaSet');
    expect(event).toMatchObject({ type: 'Warning' });
    expect(String(event?.['message'])).toMatch(/^Error creating: pods "/);
    // A retry refuses a pod of another name, so its Event is another one, as client-go's event recorder keeps them.
    await eventually(() => warnings('ReplicaSet').length > 1, 'the retry said again');
    expect(h.pods()).toHaveLength(1);
    await eventually(
      () =>
        JSON.stringify(h.get('', 'resourcequotas', 'compute')?.['status']) ===
        '{"hard":{"pods":"1"},"used":{"pods":"1"}}',
      'status.used',
    );

    setQuota({ pods: '3' });
    await eventually(() => h.pods().length === 3, 'three pods after the raise');
    await eventually(() => !failure(h.get('apps', 'deployments', 'web')), 'Deployment condition dropped');
    expect(failure(h.get('apps', 'replicasets', rsName))).toBeUndefined();
  });

  it('emits "create Pod … failed error" on a StatefulSet, counting retries, without a condition, and creates the pods after the raise', async () => {
    h.create('apps', 'statefulsets', {
      apiVersion: 'apps/v1',
      kind: 'StatefulSet',
      metadata: { name: 'sts' },
      spec: {
        replicas: 3,
        podManagementPolicy: 'Parallel',
        serviceName: 'sts',
        selector: { matchLabels: { app: 'sts' } },
        template: podTemplate({ app: 'sts' }, [container()]),
      },
    });
    const message = `create Pod sts-1 in StatefulSet sts failed error: pods "sts-1" is forbidden: ${QUOTA_MESSAGE}`;
    await eventually(
      () => (warnings('StatefulSet')[0]?.['count'] as number) > 1,
      'FailedCreate counted twice',
    );
    expect(warnings('StatefulSet')).toEqual([expect.objectContaining({ type: 'Warning', message })]);
    expect(conditions(h.get('apps', 'statefulsets', 'sts'))).toEqual([]);
    expect(h.pods().map((p) => p.metadata.name)).toEqual(['sts-0']);

    setQuota({ pods: '3' });
    await eventually(() => h.pods().length === 3, 'three pods after the raise');
  });

  it('names the missing request of a StatefulSet pod with its container from 1.24', async () => {
    setQuota({ 'requests.cpu': '2' });
    h.create('apps', 'statefulsets', {
      apiVersion: 'apps/v1',
      kind: 'StatefulSet',
      metadata: { name: 'sts' },
      spec: {
        replicas: 1,
        serviceName: 'sts',
        selector: { matchLabels: { app: 'sts' } },
        template: podTemplate({ app: 'sts' }, [container()]),
      },
    });
    await eventually(() => warnings('StatefulSet').length > 0, 'FailedCreate');
    expect(warnings('StatefulSet')[0]?.['message']).toBe(
      'create Pod sts-0 in StatefulSet sts failed error: pods "sts-0" is forbidden: failed quota: compute: must specify requests.cpu for: app',
    );
  });

  it('emits FailedCreate on a Job whose pod is refused, and runs it after the raise', async () => {
    setQuota({ pods: '0' });
    h.create('batch', 'jobs', {
      apiVersion: 'batch/v1',
      kind: 'Job',
      metadata: { name: 'job' },
      spec: { template: podTemplate({ app: 'job' }, [container()], { restartPolicy: 'Never' }) },
    });
    await eventually(() => warnings('Job').length > 0, 'FailedCreate');
    expect(warnings('Job')[0]).toMatchObject({
      type: 'Warning',
    });
    expect(String(warnings('Job')[0]?.['message'])).toMatch(
      /^Error creating: pods "job-[a-z0-9]{5}" is forbidden: exceeded quota: compute, requested: pods=1, used: pods=0, limited: pods=0$/,
    );
    setQuota({ pods: '1' });
    await eventually(() => h.pods().length === 1, 'the Job pod after the raise');
  });
});
