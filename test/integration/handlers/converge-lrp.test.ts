/**
 * converge-lrp for a desired LRP, through the client-node adapter against the simulated cluster: the
 * Deployment from the translation, its registry Secret and PDB, updates, scaling and re-runs.
 */
import type { DesiredLrp } from '@opi/domain';
import {
  ANNOTATION_DESIRED_LRP,
  ANNOTATION_GENERATION,
  ANNOTATION_LAST_UPDATED,
  DOCKER_CONFIG_JSON_KEY,
  credentialsFromDockerConfig,
  lrpToDeployment,
  registrySecretName,
  workloadName,
} from '@opi/translation';
import { convergeLrp } from '../../../apps/worker/src/index.js';
import {
  RUN_AS_NON_ROOT,
  allAnnotations,
  defaulted,
  deploymentOf,
  desireAndConverge,
  handlerSuite,
  names,
  newLrp,
  pdbOf,
  secretOf,
} from '../../support/handler-deps.js';

const PASSWORD = 's3cr:et';
const suite = handlerSuite('converge-lrp');

describe('converge-lrp: a desired LRP', () => {
  it('creates the Deployment from the translation, stamped with the record generation', async () => {
    const e = await suite.newEnv();
    const lrp = newLrp();
    const { generation } = await e.store.desire(lrp);

    await expect(convergeLrp(e.deps, lrp.processGuid)).resolves.toMatchObject({
      kind: 'converged',
      action: 'created',
      workload: 'deployment',
    });

    const d = await deploymentOf(e, lrp);
    const expected = lrpToDeployment(lrp, { runAsNonRoot: RUN_AS_NON_ROOT });
    expect(d).toBeDefined();
    expect(d!.spec).toEqual(defaulted(e, 'deployments', expected).spec);
    expect(d!.metadata.labels).toEqual(expected.metadata.labels);
    expect(d!.metadata.annotations).toEqual({
      ...expected.metadata.annotations,
      [ANNOTATION_GENERATION]: String(generation),
    });
    expect(names(e, 'deployments')).toEqual([workloadName(lrp)]);
  });

  it('makes the registry Secret owned by the Deployment, with the password only in its data', async () => {
    const e = await suite.newEnv();
    const lrp = newLrp();
    expect(JSON.stringify(lrp.registry)).toContain(PASSWORD);
    await desireAndConverge(e, lrp);

    const d = (await deploymentOf(e, lrp))!;
    const secret = await secretOf(e, lrp);
    expect(secret).toBeDefined();
    expect(secret!.type).toBe('kubernetes.io/dockerconfigjson');
    expect(secret!.metadata.ownerReferences).toEqual([
      expect.objectContaining({
        kind: 'Deployment',
        name: d.metadata.name,
        uid: d.metadata.uid,
        controller: true,
      }),
    ]);
    const config = Buffer.from(secret!.data![DOCKER_CONFIG_JSON_KEY]!, 'base64').toString('utf8');
    expect(credentialsFromDockerConfig(config)).toEqual(lrp.registry);
    expect(d.spec!.template.spec!.imagePullSecrets).toEqual([{ name: registrySecretName(lrp) }]);

    // Never in an annotation, nor anywhere on the Deployment.
    expect(allAnnotations(e)).not.toContain(PASSWORD);
    expect(JSON.stringify(d)).not.toContain(PASSWORD);
    expect(JSON.parse(d.metadata.annotations![ANNOTATION_DESIRED_LRP]!)).not.toHaveProperty('registry');
  });

  it('makes a PDB owned by the Deployment when instances > 1, and none for one instance', async () => {
    const e = await suite.newEnv();
    const many = newLrp({ instances: 3 });
    const one = newLrp({ instances: 1, appName: 'single' });
    await desireAndConverge(e, many);
    await desireAndConverge(e, one);

    const d = (await deploymentOf(e, many))!;
    const pdb = await pdbOf(e, many);
    expect(pdb?.spec).toEqual({
      minAvailable: '50%',
      selector: {
        matchLabels: { 'cloudfoundry.org/guid': many.guid, 'cloudfoundry.org/version': many.version },
      },
    });
    expect(pdb?.metadata.ownerReferences).toEqual([expect.objectContaining({ uid: d.metadata.uid })]);

    expect(await deploymentOf(e, one)).toBeDefined();
    expect(await pdbOf(e, one)).toBeUndefined();
    expect(names(e, 'poddisruptionbudgets')).toEqual([workloadName(many)]);
  });

  it('makes no Secret and no pull secret reference without credentials', async () => {
    const e = await suite.newEnv();
    const { registry: _r, ...rest } = newLrp();
    const lrp: DesiredLrp = rest;
    await desireAndConverge(e, lrp);

    const d = (await deploymentOf(e, lrp))!;
    expect(d.spec!.template.spec!.imagePullSecrets).toBeUndefined();
    expect(names(e, 'secrets')).toEqual([]);
  });

  it('changes nothing when run again', async () => {
    const e = await suite.newEnv();
    const lrp = newLrp();
    await desireAndConverge(e, lrp);
    const before = {
      d: (await deploymentOf(e, lrp))!.metadata.resourceVersion,
      s: (await secretOf(e, lrp))!.metadata.resourceVersion,
      p: (await pdbOf(e, lrp))!.metadata.resourceVersion,
    };
    const writes = () => e.calls.filter((c) => ['create', 'update', 'patch'].includes(c.verb)).length;
    const writesBefore = writes();

    await expect(convergeLrp(e.deps, lrp.processGuid)).resolves.toMatchObject({
      kind: 'converged',
      action: 'unchanged',
    });
    await expect(convergeLrp(e.deps, lrp.processGuid)).resolves.toMatchObject({
      kind: 'converged',
      action: 'unchanged',
    });

    expect({
      d: (await deploymentOf(e, lrp))!.metadata.resourceVersion,
      s: (await secretOf(e, lrp))!.metadata.resourceVersion,
      p: (await pdbOf(e, lrp))!.metadata.resourceVersion,
    }).toEqual(before);
    expect(writes()).toBe(writesBefore);
  });

  it('replaces the Deployment on an update (replicas, last_updated) without touching the pod template', async () => {
    const e = await suite.newEnv();
    const lrp = newLrp({ instances: 3 });
    await desireAndConverge(e, lrp);
    const before = (await deploymentOf(e, lrp))!;
    const secretBefore = (await secretOf(e, lrp))!;

    const updated = await e.store.update(lrp.processGuid, { instances: 5, annotation: '1600000000.5' });
    await expect(convergeLrp(e.deps, lrp.processGuid)).resolves.toMatchObject({
      kind: 'converged',
      action: 'updated',
    });

    const after = (await deploymentOf(e, lrp))!;
    expect(after.metadata.uid).toBe(before.metadata.uid);
    expect(after.spec!.replicas).toBe(5);
    expect(after.metadata.annotations![ANNOTATION_LAST_UPDATED]).toBe('1600000000.5');
    expect(after.metadata.annotations![ANNOTATION_GENERATION]).toBe(String(updated!.generation));
    expect(JSON.parse(after.metadata.annotations![ANNOTATION_DESIRED_LRP]!)).toMatchObject({
      instances: 5,
      annotation: '1600000000.5',
    });
    expect(after.spec!.template).toEqual(before.spec!.template);
    // The companions stay: the Secret unchanged and still owned, the PDB still there.
    expect((await secretOf(e, lrp))!.metadata.resourceVersion).toBe(secretBefore.metadata.resourceVersion);
    expect(await pdbOf(e, lrp)).toBeDefined();

    // An annotation-only update: only the Deployment's annotations move.
    await e.store.update(lrp.processGuid, { instances: 5, annotation: '1600000001.0' });
    await convergeLrp(e.deps, lrp.processGuid);
    const again = (await deploymentOf(e, lrp))!;
    expect(again.spec).toEqual(after.spec);
    expect(again.metadata.annotations![ANNOTATION_LAST_UPDATED]).toBe('1600000001.0');
  });

  it('removes the PDB when scaled to one instance, and makes it again when scaled up', async () => {
    const e = await suite.newEnv();
    const lrp = newLrp({ instances: 3 });
    await desireAndConverge(e, lrp);
    expect(await pdbOf(e, lrp)).toBeDefined();

    await e.store.update(lrp.processGuid, { instances: 1, annotation: 'scaled-down' });
    await convergeLrp(e.deps, lrp.processGuid);
    expect((await deploymentOf(e, lrp))!.spec!.replicas).toBe(1);
    expect(await pdbOf(e, lrp)).toBeUndefined();
    expect(await secretOf(e, lrp)).toBeDefined();

    await e.store.update(lrp.processGuid, { instances: 2, annotation: 'scaled-up' });
    await convergeLrp(e.deps, lrp.processGuid);
    expect(await pdbOf(e, lrp)).toBeDefined();
  });

  it('converges to the latest record, whatever generation the job was for', async () => {
    const e = await suite.newEnv();
    const lrp = newLrp({ instances: 2 });
    await e.store.desire(lrp);
    const latest = await e.store.update(lrp.processGuid, { instances: 4, annotation: 'newest' });
    // One converge (e.g. the desire's job, run late) applies the update as well.
    await convergeLrp(e.deps, lrp.processGuid);
    const d = (await deploymentOf(e, lrp))!;
    expect(d.spec!.replicas).toBe(4);
    expect(d.metadata.annotations![ANNOTATION_GENERATION]).toBe(String(latest!.generation));
  });

  it('does nothing for a process guid without a record', async () => {
    const e = await suite.newEnv();
    await expect(convergeLrp(e.deps, newLrp().processGuid)).resolves.toEqual({ kind: 'no-record' });
    expect(names(e, 'deployments')).toEqual([]);
  });
});
