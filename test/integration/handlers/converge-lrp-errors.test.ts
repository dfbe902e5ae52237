/**
 * converge-lrp when Kubernetes calls fail, through the client-node adapter against the simulated
 * cluster with `withFaults`: errors before a write, an answer lost after the write took effect, failed
 * deletes of companions, and the one-call path of a fresh desire.
 */
import { KubeApiError } from '@opi/kube';
import { ANNOTATION_GENERATION, workloadName } from '@opi/translation';
import { convergeLrp } from '../../../apps/worker/src/index.js';
import { DesireRefused } from '../../../apps/worker/src/handlers/refusal.js';
import {
  deploymentOf,
  desireAndConverge,
  handlerSuite,
  invalidError,
  names,
  newLrp,
  pdbOf,
  secretOf,
  timeoutError,
} from '../../support/handler-deps.js';

const suite = handlerSuite('converge-errors');

describe('converge-lrp: Kubernetes errors', () => {
  it('throws a transient KubeApiError when the create is unavailable; a retry then converges', async () => {
    const e = await suite.newEnv();
    const lrp = newLrp();
    await e.store.desire(lrp);
    e.kube.faults.inject({ resource: 'deployments', verb: 'create' });

    const err: unknown = await convergeLrp(e.deps, lrp.processGuid).catch((x: unknown) => x);
    expect(err).toBeInstanceOf(KubeApiError);
    expect(err).toMatchObject({ transient: true, status: 503 });
    expect(await deploymentOf(e, lrp)).toBeUndefined();

    await expect(convergeLrp(e.deps, lrp.processGuid)).resolves.toMatchObject({
      kind: 'converged',
      action: 'created',
    });
    const d = (await deploymentOf(e, lrp))!;
    expect((await secretOf(e, lrp))!.metadata.ownerReferences).toEqual([
      expect.objectContaining({ uid: d.metadata.uid }),
    ]);
    expect(await pdbOf(e, lrp)).toBeDefined();
  });

  it("throws the refusal of an invalid create with the permanent KubeApiError and the record's generation", async () => {
    const e = await suite.newEnv();
    const lrp = newLrp();
    const { generation } = await e.store.desire(lrp);
    e.kube.faults.inject({ resource: 'deployments', verb: 'create', error: invalidError });

    const err: unknown = await convergeLrp(e.deps, lrp.processGuid).catch((x: unknown) => x);
    expect(err).toBeInstanceOf(DesireRefused);
    expect(err).toMatchObject({ processGuid: lrp.processGuid, generation });
    expect((err as DesireRefused).refusal).toBeInstanceOf(KubeApiError);
    expect((err as DesireRefused).refusal).toMatchObject({ transient: false, status: 422 });
  });

  it('deletes the pull Secret on stop when the Deployment was never created', async () => {
    const e = await suite.newEnv();
    const lrp = newLrp(); // the sample carries registry credentials
    await e.store.desire(lrp);
    e.kube.faults.inject({ resource: 'deployments', verb: 'create', error: invalidError });
    await convergeLrp(e.deps, lrp.processGuid).catch(() => undefined);
    expect(await secretOf(e, lrp)).toBeDefined();
    expect(await deploymentOf(e, lrp)).toBeUndefined();
    await e.store.stop(lrp.processGuid, lrp.guid, lrp.version);
    await convergeLrp(e.deps, lrp.processGuid);
    expect(await secretOf(e, lrp)).toBeUndefined();
  });

  it('recovers when the answer to the create was lost (the Deployment exists)', async () => {
    const e = await suite.newEnv();
    const lrp = newLrp();
    await e.store.desire(lrp);
    e.kube.faults.inject({ resource: 'deployments', verb: 'create', when: 'after', error: timeoutError });

    await expect(convergeLrp(e.deps, lrp.processGuid)).rejects.toMatchObject({ transient: true });
    expect(names(e, 'deployments')).toEqual([workloadName(lrp)]);
    await convergeLrp(e.deps, lrp.processGuid);

    const d = (await deploymentOf(e, lrp))!;
    expect(names(e, 'deployments')).toEqual([workloadName(lrp)]);
    expect((await secretOf(e, lrp))!.metadata.ownerReferences).toEqual([
      expect.objectContaining({ uid: d.metadata.uid }),
    ]);
    expect((await pdbOf(e, lrp))!.metadata.ownerReferences).toEqual([
      expect.objectContaining({ uid: d.metadata.uid }),
    ]);
  });

  it('removes the PDB on the retry when its delete failed after the scale-down', async () => {
    const e = await suite.newEnv();
    const lrp = newLrp({ instances: 3 });
    await desireAndConverge(e, lrp);
    await e.store.update(lrp.processGuid, { instances: 1, annotation: 'scaled-down' });
    e.kube.faults.inject({ resource: 'poddisruptionbudgets', verb: 'delete' });

    await expect(convergeLrp(e.deps, lrp.processGuid)).rejects.toMatchObject({ transient: true });
    expect((await deploymentOf(e, lrp))!.spec!.replicas).toBe(1);

    await convergeLrp(e.deps, lrp.processGuid);
    expect(await pdbOf(e, lrp)).toBeUndefined();
  });

  it('creates a fresh desire with a single call, reading nothing first', async () => {
    const e = await suite.newEnv();
    const { registry: _r, ...lrp } = newLrp();
    await e.store.desire({ ...lrp, instances: 1 });
    const before = e.calls.length;

    await expect(convergeLrp(e.deps, lrp.processGuid, { fresh: true })).resolves.toMatchObject({
      kind: 'converged',
      action: 'created',
    });

    expect(e.calls.slice(before).map((c) => `${c.verb} ${c.resource}`)).toEqual(['create deployments']);
  });

  it('converges as without the hint when "fresh" is wrong (the Deployment exists, older)', async () => {
    const e = await suite.newEnv();
    const lrp = newLrp();
    await desireAndConverge(e, lrp);
    const updated = await e.store.update(lrp.processGuid, { instances: 1, annotation: 'scaled down' });

    await expect(convergeLrp(e.deps, lrp.processGuid, { fresh: true })).resolves.toMatchObject({
      kind: 'converged',
      action: 'updated',
    });

    const d = (await deploymentOf(e, lrp))!;
    expect(d.spec!.replicas).toBe(1);
    expect(d.metadata.annotations![ANNOTATION_GENERATION]).toBe(String(updated!.generation));
    expect(await pdbOf(e, lrp)).toBeUndefined();
  });

  it('removes the Secret on the retry when its delete failed after a desire without credentials', async () => {
    const e = await suite.newEnv();
    const lrp = newLrp();
    await desireAndConverge(e, lrp);
    await e.store.stop(lrp.processGuid, lrp.guid, lrp.version);
    const { registry: _r, ...rest } = lrp;
    await e.store.desire({ ...rest, annotation: 'public image now' });
    e.kube.faults.inject({ resource: 'secrets', verb: 'delete' });

    await expect(convergeLrp(e.deps, lrp.processGuid)).rejects.toMatchObject({ transient: true });
    await convergeLrp(e.deps, lrp.processGuid);

    expect((await deploymentOf(e, lrp))!.spec!.template.spec!.imagePullSecrets).toBeUndefined();
    expect(await secretOf(e, lrp)).toBeUndefined();
  });
});
