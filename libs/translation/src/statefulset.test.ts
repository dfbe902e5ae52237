import { describe, expect, it } from '@jest/globals';
import { lrpToDeployment } from './deployment.js';
import { POD_INDEX_LABEL } from './env.js';
import { sampleLrp } from './lrp.fixture.js';
import { lrpToStatefulSet } from './statefulset.js';

const fieldRef = (name: string, fieldPath: string) => ({
  name,
  valueFrom: { fieldRef: { apiVersion: 'v1', fieldPath } },
});
const indexEnv = [
  fieldRef('CF_INSTANCE_INDEX', `metadata.labels['${POD_INDEX_LABEL}']`),
  fieldRef('INSTANCE_INDEX', `metadata.labels['${POD_INDEX_LABEL}']`),
  fieldRef('INSTANCE_GUID', 'metadata.uid'),
];

describe('lrpToStatefulSet', () => {
  it('runs the same pods as the Deployment, all at once, rolled out a quarter at a time', () => {
    const lrp = sampleLrp();
    const deployment = lrpToDeployment(lrp, { runAsNonRoot: true });
    const sts = lrpToStatefulSet(lrp, { runAsNonRoot: true, instanceIndexEnv: false });
    expect(sts).toEqual({
      apiVersion: 'apps/v1',
      kind: 'StatefulSet',
      metadata: deployment.metadata,
      spec: {
        replicas: lrp.instances,
        selector: deployment.spec.selector,
        serviceName: '',
        podManagementPolicy: 'Parallel',
        updateStrategy: { type: 'RollingUpdate', rollingUpdate: { maxUnavailable: '25%' } },
        revisionHistoryLimit: 2,
        template: deployment.spec.template,
      },
    });
  });

  it("tells each container its index from the pod's ordinal and its instance guid from the pod's uid", () => {
    const lrp = sampleLrp();
    const plain = lrpToStatefulSet(lrp, { runAsNonRoot: true, instanceIndexEnv: false });
    const indexed = lrpToStatefulSet(lrp, { runAsNonRoot: true, instanceIndexEnv: true });
    const env = (s: typeof plain) => s.spec.template.spec?.containers[0]?.env ?? [];
    expect(env(indexed)).toEqual([...env(plain), ...indexEnv]);
    expect(env(plain).map((e) => e.name)).not.toContain('CF_INSTANCE_INDEX');
    // Everything else in the template is the same.
    const withoutEnv = (s: typeof plain) => ({
      ...s.spec.template,
      spec: { ...s.spec.template.spec, containers: [{ ...s.spec.template.spec?.containers[0], env: [] }] },
    });
    expect(withoutEnv(indexed)).toEqual(withoutEnv(plain));
  });

  it("replaces the request's own CF_INSTANCE_INDEX and INSTANCE_INDEX, as Diego's do", () => {
    const lrp = sampleLrp({
      environment: { CF_INSTANCE_INDEX: '7', INSTANCE_INDEX: '7', INSTANCE_GUID: 'x', KEPT: 'yes' },
    });
    const env = lrpToStatefulSet(lrp, { runAsNonRoot: true, instanceIndexEnv: true }).spec.template.spec
      ?.containers[0]?.env;
    expect(env?.filter((e) => e.name.includes('INSTANCE_INDEX') || e.name === 'INSTANCE_GUID')).toEqual(
      indexEnv,
    );
    expect(env).toContainEqual({ name: 'KEPT', value: 'yes' });
  });

  it('leaves room for the revision hash and the ordinal within 63 characters', () => {
    const lrp = sampleLrp({ appName: 'a'.repeat(300), spaceName: 's'.repeat(300) });
    const { name } = lrpToStatefulSet(lrp, { runAsNonRoot: true, instanceIndexEnv: true }).metadata;
    expect(name?.length).toBeLessThanOrEqual(52);
    // controller-revision-hash is `<name>-<hash of 10>`, a pod `<name>-<ordinal up to 9999>`.
    expect(`${name ?? ''}-0123456789`.length).toBeLessThanOrEqual(63);
    expect(`${name ?? ''}-9999`.length).toBeLessThanOrEqual(63);
  });
});
