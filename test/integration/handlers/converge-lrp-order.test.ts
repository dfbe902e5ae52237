/**
 * converge-lrp in any order of desire, stop and converge, and two converges of one LRP at once, through
 * the client-node adapter against the simulated cluster.
 */
import { ANNOTATION_GENERATION, ANNOTATION_LAST_UPDATED } from '@opi/translation';
import { convergeLrp } from '../../../apps/worker/src/index.js';
import {
  NS,
  deploymentOf,
  desireAndConverge,
  handlerSuite,
  names,
  newLrp,
  pdbOf,
  secretOf,
} from '../../support/handler-deps.js';

const suite = handlerSuite('converge-order');

describe('converge-lrp: order and concurrency', () => {
  it('desire → converge → stop → desire again → converge ends with the Deployment present', async () => {
    const e = await suite.newEnv();
    const lrp = newLrp();
    await desireAndConverge(e, lrp);
    await e.store.stop(lrp.processGuid, lrp.guid, lrp.version);
    const again = await e.store.desire({ ...lrp, annotation: 'desired-again' });
    expect(again.changed).toBe(true);
    await convergeLrp(e.deps, lrp.processGuid);

    const d = await deploymentOf(e, lrp);
    expect(d).toBeDefined();
    expect(d!.metadata.annotations![ANNOTATION_GENERATION]).toBe(String(again.generation));
    expect(d!.metadata.annotations![ANNOTATION_LAST_UPDATED]).toBe('desired-again');
    expect((await secretOf(e, lrp))!.metadata.ownerReferences).toEqual([
      expect.objectContaining({ uid: d!.metadata.uid }),
    ]);
    // The stop's job, late, after the new desire: reads the record, keeps the Deployment.
    await convergeLrp(e.deps, lrp.processGuid);
    expect(await deploymentOf(e, lrp)).toBeDefined();
    expect(await e.redis.ttl(e.store.keys.lrp(lrp.processGuid))).toBe(-1);
  });

  it('desire → converge → stop → converge → desire again → converge brings it back', async () => {
    const e = await suite.newEnv();
    const lrp = newLrp();
    await desireAndConverge(e, lrp);
    await e.store.stop(lrp.processGuid, lrp.guid, lrp.version);
    await convergeLrp(e.deps, lrp.processGuid);
    expect(await deploymentOf(e, lrp)).toBeUndefined();

    await desireAndConverge(e, lrp);
    expect(await deploymentOf(e, lrp)).toBeDefined();
    expect(await pdbOf(e, lrp)).toBeDefined();
    // The new record does not inherit the tombstone's expiry.
    expect(await e.redis.ttl(e.store.keys.lrp(lrp.processGuid))).toBe(-1);
  });

  it('desire → stop → converge ends with nothing', async () => {
    const e = await suite.newEnv();
    const lrp = newLrp();
    await e.store.desire(lrp);
    await e.store.stop(lrp.processGuid, lrp.guid, lrp.version);
    // Both jobs run after the stop: both see the tombstone.
    await convergeLrp(e.deps, lrp.processGuid);
    await convergeLrp(e.deps, lrp.processGuid);
    expect(names(e, 'deployments')).toEqual([]);
    expect(names(e, 'secrets')).toEqual([]);
    expect(names(e, 'poddisruptionbudgets')).toEqual([]);
  });

  it('two converges of one LRP at once make one Deployment, whatever the interleaving', async () => {
    const e = await suite.newEnv();
    // The second converge starts a few turns of the event loop after the first, so the two meet at
    // different steps (create, AlreadyExists, Secret ownership, PDB).
    for (let lag = 0; lag < 12; lag++) {
      const lrp = newLrp({ appName: `race-${lag}` });
      await e.store.desire(lrp);
      const late = async (): Promise<Awaited<ReturnType<typeof convergeLrp>>> => {
        for (let i = 0; i < lag; i++) await new Promise<void>((r) => setImmediate(r));
        return convergeLrp(e.deps, lrp.processGuid);
      };
      const results = await Promise.all([convergeLrp(e.deps, lrp.processGuid), late()]);
      expect(results.filter((r) => r.kind === 'converged' && r.action === 'created')).toHaveLength(1);

      const list = await e.kube.deployments.list(NS, `cloudfoundry.org/guid=${lrp.guid}`);
      expect(list.items).toHaveLength(1);
      const d = list.items[0]!;
      expect((await secretOf(e, lrp))!.metadata.ownerReferences).toEqual([
        expect.objectContaining({ uid: d.metadata.uid }),
      ]);
      expect((await pdbOf(e, lrp))!.metadata.ownerReferences).toEqual([
        expect.objectContaining({ uid: d.metadata.uid }),
      ]);
    }
  });
});
