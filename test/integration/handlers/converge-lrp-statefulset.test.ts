/**
 * converge-lrp in the StatefulSet mode, through the client-node adapter against the simulated cluster:
 * StatefulSets that tell each instance its index, LRPs that keep the kind they run as, and stops that
 * delete either kind.
 */
import { randomUUID } from 'node:crypto';
import { ANNOTATION_GENERATION, lrpToDeployment, lrpToStatefulSet, workloadName } from '@opi/translation';
import { convergeLrp } from '../../../apps/worker/src/index.js';
import { eventually } from '../../support/eventually.js';
import {
  NS,
  RUN_AS_NON_ROOT,
  defaulted,
  deploymentOf,
  desireAndConverge,
  handlerSuite,
  names,
  newLrp,
  pdbOf,
  secretOf,
  statefulSetOf,
} from '../../support/handler-deps.js';

const suite = handlerSuite('converge-sts');

describe('converge-lrp: the StatefulSet mode', () => {
  it('creates a StatefulSet that tells each instance its index, and owns the Secret and PDB', async () => {
    const e = await suite.newEnv('statefulset');
    const lrp = newLrp({ instances: 3 });
    const { generation } = await e.store.desire(lrp);
    await expect(convergeLrp(e.deps, lrp.processGuid)).resolves.toMatchObject({
      kind: 'converged',
      action: 'created',
      workload: 'statefulset',
    });

    const s = (await statefulSetOf(e, lrp))!;
    const expected = lrpToStatefulSet(lrp, { runAsNonRoot: RUN_AS_NON_ROOT, instanceIndexEnv: true });
    expect(s.spec).toEqual(defaulted(e, 'statefulsets', expected).spec);
    expect(s.metadata.annotations?.[ANNOTATION_GENERATION]).toBe(String(generation));
    expect(s.spec?.template.spec?.containers[0]?.env?.map((v) => v.name)).toContain('CF_INSTANCE_INDEX');
    expect(names(e, 'deployments')).toEqual([]);
    for (const owned of [await secretOf(e, lrp), await pdbOf(e, lrp)]) {
      expect(owned?.metadata.ownerReferences).toEqual([
        expect.objectContaining({ kind: 'StatefulSet', uid: s.metadata.uid, controller: true }),
      ]);
    }

    // An update replaces it; nothing else appears.
    await e.store.update(lrp.processGuid, { instances: 1, annotation: '2.0' });
    await expect(convergeLrp(e.deps, lrp.processGuid)).resolves.toMatchObject({
      kind: 'converged',
      action: 'updated',
      workload: 'statefulset',
    });
    expect((await statefulSetOf(e, lrp))?.spec?.replicas).toBe(1);
    expect(await pdbOf(e, lrp)).toBeUndefined();
    expect(names(e, 'deployments')).toEqual([]);
  });

  it('never converts an LRP that runs as a Deployment: it keeps its kind through updates', async () => {
    const e = await suite.newEnv();
    const lrp = newLrp();
    await desireAndConverge(e, lrp);
    const before = (await deploymentOf(e, lrp))!;

    e.deps = { ...e.deps, workloadKind: 'statefulset' };
    await e.store.update(lrp.processGuid, { instances: 2, annotation: '2.0' });
    await expect(convergeLrp(e.deps, lrp.processGuid)).resolves.toMatchObject({
      kind: 'converged',
      action: 'updated',
      workload: 'deployment',
    });
    expect((await deploymentOf(e, lrp))?.metadata.uid).toBe(before.metadata.uid);
    expect((await deploymentOf(e, lrp))?.spec?.replicas).toBe(2);
    expect(names(e, 'statefulsets')).toEqual([]);

    // A new version is a new LRP: it runs as the configured kind.
    const next = newLrp({ guid: lrp.guid, processGuid: `${lrp.guid}-${randomUUID()}` });
    next.version = next.processGuid.slice(lrp.guid.length + 1);
    await desireAndConverge(e, next);
    expect(names(e, 'statefulsets')).toEqual([workloadName(next)]);
  });

  it("a stop deletes the LRP's workloads of either kind", async () => {
    const e = await suite.newEnv('statefulset');
    const lrp = newLrp();
    await desireAndConverge(e, lrp);
    // The same LRP also as a Deployment, as a mode switch with a lost record could leave it.
    await e.kube.deployments.create(NS, lrpToDeployment(lrp, { runAsNonRoot: RUN_AS_NON_ROOT }));

    await e.store.stop(lrp.processGuid, lrp.guid, lrp.version);
    await expect(convergeLrp(e.deps, lrp.processGuid)).resolves.toEqual({
      kind: 'stopped',
      deployments: 1,
      statefulsets: 1,
    });
    expect(names(e, 'statefulsets')).toEqual([]);
    expect(names(e, 'deployments')).toEqual([]);
    // The garbage collector takes the Secret the StatefulSet owned.
    await eventually(async () => (await secretOf(e, lrp)) === undefined, 'the Secret to be collected');
  });
});
