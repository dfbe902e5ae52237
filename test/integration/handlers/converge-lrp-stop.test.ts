/**
 * converge-lrp for a stopped LRP, through the client-node adapter against the simulated cluster: the
 * Deployment deleted and the garbage collector taking what it owned, re-runs, and Deployments only the
 * cluster knows.
 */
import { lrpToDeployment, registrySecretName, workloadName } from '@opi/translation';
import { convergeLrp } from '../../../apps/worker/src/index.js';
import { eventually } from '../../support/eventually.js';
import {
  NS,
  RUN_AS_NON_ROOT,
  deploymentOf,
  desireAndConverge,
  handlerSuite,
  names,
  newLrp,
  pdbOf,
  secretOf,
  seedPod,
} from '../../support/handler-deps.js';
import { pod } from '../../support/handler-sync.js';

const suite = handlerSuite('converge-stop');

describe('converge-lrp: a stopped LRP', () => {
  it('deletes the Deployment, and the cascade takes its Secret, PDB and pods', async () => {
    const e = await suite.newEnv();
    const lrp = newLrp({ instances: 3 });
    const bystander = newLrp({ appName: 'bystander' });
    await desireAndConverge(e, lrp);
    await desireAndConverge(e, bystander);
    const d = (await deploymentOf(e, lrp))!;
    // A pod owned by the Deployment (through its ReplicaSet, in a cluster).
    const owned = pod(lrp, 'web-0', 0, 'running');
    seedPod(e, {
      ...owned,
      metadata: {
        ...owned.metadata,
        ownerReferences: [
          { apiVersion: 'apps/v1', kind: 'Deployment', name: d.metadata.name, uid: d.metadata.uid },
        ],
      },
    });
    expect(names(e, 'pods')).toEqual(['web-0']);

    const { existed } = await e.store.stop(lrp.processGuid, lrp.guid, lrp.version);
    expect(existed).toBe(true);
    await expect(convergeLrp(e.deps, lrp.processGuid)).resolves.toEqual({
      kind: 'stopped',
      deployments: 1,
      statefulsets: 0,
    });

    expect(await deploymentOf(e, lrp)).toBeUndefined();
    // The garbage collector deletes what the Deployment owned, a moment later.
    await eventually(
      async () => (await secretOf(e, lrp)) === undefined && (await pdbOf(e, lrp)) === undefined,
      'the Secret and PDB to be collected',
    );
    await eventually(async () => names(e, 'pods').length === 0, 'the pod to be collected');
    // The other LRP is untouched.
    expect(names(e, 'deployments')).toEqual([workloadName(bystander)]);
    expect(names(e, 'secrets')).toEqual([registrySecretName(bystander)]);
    // The tombstone now expires.
    const ttl = await e.redis.ttl(e.store.keys.lrp(lrp.processGuid));
    expect(ttl).toBeGreaterThan(0);
  });

  it('is fine when run again (nothing left to delete)', async () => {
    const e = await suite.newEnv();
    const lrp = newLrp();
    await desireAndConverge(e, lrp);
    await e.store.stop(lrp.processGuid, lrp.guid, lrp.version);
    await convergeLrp(e.deps, lrp.processGuid);

    await expect(convergeLrp(e.deps, lrp.processGuid)).resolves.toEqual({
      kind: 'stopped',
      deployments: 0,
      statefulsets: 0,
    });
    await expect(e.kube.deployments.delete(NS, workloadName(lrp))).resolves.toBe('absent');
    expect(names(e, 'deployments')).toEqual([]);
  });

  it('deletes the Deployment of an LRP that was never desired here', async () => {
    const e = await suite.newEnv();
    const lrp = newLrp();
    const bystander = newLrp({ appName: 'bystander' });
    // Made by an earlier installation, or a record lost: only the cluster knows it.
    await e.kube.deployments.create(NS, lrpToDeployment(lrp, { runAsNonRoot: RUN_AS_NON_ROOT }));
    await e.kube.deployments.create(NS, lrpToDeployment(bystander, { runAsNonRoot: RUN_AS_NON_ROOT }));

    const { existed } = await e.store.stop(lrp.processGuid, lrp.guid, lrp.version);
    expect(existed).toBe(false);
    await expect(convergeLrp(e.deps, lrp.processGuid)).resolves.toEqual({
      kind: 'stopped',
      deployments: 1,
      statefulsets: 0,
    });

    expect(names(e, 'deployments')).toEqual([workloadName(bystander)]);
  });
});
