/**
 * converge-lrp from stale views, through the client-node adapter against the simulated cluster: two
 * converges with calls delayed at random, and converges overtaken by a stop or an update between reading
 * the record and writing the cluster (one-shot hooks before a call), which the next sync puts right.
 */
import { ANNOTATION_GENERATION, ANNOTATION_LAST_UPDATED } from '@opi/translation';
import { convergeLrp } from '../../../apps/worker/src/index.js';
import { eventually } from '../../support/eventually.js';
import {
  SYNC_LOCK_TTL_MS,
  deploymentOf,
  desireAndConverge,
  handlerSuite,
  names,
  newLrp,
  objects,
  secretOf,
} from '../../support/handler-deps.js';
import { pendingConverges, syncWatched } from '../../support/handler-sync.js';
import { jittery } from '../../support/kube-wrappers.js';

const suite = handlerSuite('converge-stale');

describe('converge-lrp: stale views', () => {
  it('two converges of one LRP at once never fail, with calls delayed at random', async () => {
    const e = await suite.newEnv();
    const failures: unknown[] = [];
    for (let seed = 1; seed <= 40; seed++) {
      const deps = { ...e.deps, kube: jittery(e.kube, seed) };
      const lrp = newLrp({ appName: `jitter-${seed}` });
      await e.store.desire(lrp);
      const results = await Promise.allSettled([
        convergeLrp(deps, lrp.processGuid),
        convergeLrp(deps, lrp.processGuid),
      ]);
      for (const r of results) if (r.status === 'rejected') failures.push(r.reason);
      const d = (await deploymentOf(e, lrp))!;
      expect((await secretOf(e, lrp))?.metadata.ownerReferences).toEqual([
        expect.objectContaining({ uid: d.metadata.uid }),
      ]);
    }
    expect(failures).toEqual([]);
    expect(objects(e, 'deployments')).toHaveLength(40);
    expect(objects(e, 'poddisruptionbudgets')).toHaveLength(40);
  });

  it('a Deployment re-created by a converge that read the record before a stop is deleted after the next sync', async () => {
    const e = await suite.newEnv();
    const lrp = newLrp();
    await e.store.desire(lrp);
    // The converge has read the desired record; the stop and its converge run before it looks at the cluster.
    e.kube.before['deployments.get'] = async () => {
      await e.store.stop(lrp.processGuid, lrp.guid, lrp.version);
      await convergeLrp(e.deps, lrp.processGuid);
    };
    await convergeLrp(e.deps, lrp.processGuid);
    expect(await deploymentOf(e, lrp)).toBeDefined();

    await expect(syncWatched(e, SYNC_LOCK_TTL_MS)).resolves.toMatchObject({ converging: 1 });
    expect(await pendingConverges(e.producer)).toEqual([lrp.processGuid]);
    await convergeLrp(e.deps, lrp.processGuid);
    expect(names(e, 'deployments')).toEqual([]);
    // What the Deployment owned goes with it (the garbage collector may take a moment).
    await eventually(
      async () => names(e, 'secrets').length + names(e, 'poddisruptionbudgets').length === 0,
      'the Secret and PDB to be gone',
    );
  });

  it('a Deployment put back to an older record by a late converge is brought forward after the next sync', async () => {
    const e = await suite.newEnv();
    const lrp = newLrp({ instances: 2 });
    await desireAndConverge(e, lrp);
    await e.store.update(lrp.processGuid, { instances: 3, annotation: 'first update' });
    let latest = 0;
    // This converge read 'first update'; a second update and its converge finish before it writes.
    e.kube.before['deployments.get'] = async () => {
      latest = (await e.store.update(lrp.processGuid, { instances: 4, annotation: 'second update' }))!
        .generation;
      await convergeLrp(e.deps, lrp.processGuid);
    };
    await convergeLrp(e.deps, lrp.processGuid);

    await syncWatched(e, SYNC_LOCK_TTL_MS);
    for (const pg of await pendingConverges(e.producer)) await convergeLrp(e.deps, pg);
    const d = (await deploymentOf(e, lrp))!;
    expect(d.spec!.replicas).toBe(4);
    expect(d.metadata.annotations![ANNOTATION_LAST_UPDATED]).toBe('second update');
    expect(d.metadata.annotations![ANNOTATION_GENERATION]).toBe(String(latest));
  });
});
