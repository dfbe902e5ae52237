/**
 * sync-cluster over either workload kind, through the client-node adapter against the simulated
 * cluster: converges for workloads missing or behind, records Redis lost rebuilt from the workloads,
 * stopped LRPs kept in GET /apps until their workload is gone, and twins of one LRP.
 */
import { WORKLOAD_KINDS } from '@opi/domain';
import { ANNOTATION_GENERATION, registrySecretName, workloadName } from '@opi/translation';
import { convergeLrp } from '../../../apps/worker/src/index.js';
import { OTHER_KIND, workloadVerbs } from '../../../apps/worker/src/handlers/workload-verbs.js';
import {
  NS,
  SYNC_LOCK_TTL_MS,
  desireAndConverge,
  handlerSuite,
  newLrp,
  workloadOf,
} from '../../support/handler-deps.js';
import { pendingConverges, schedulingInfos, syncWatched } from '../../support/handler-sync.js';

const suite = handlerSuite('sync-kinds');

describe.each(WORKLOAD_KINDS)('sync-cluster over %ss', (kind) => {
  it('enqueues a converge for a desired LRP whose workload is missing or behind', async () => {
    const e = await suite.newEnv(kind);
    const gone = newLrp({ appName: 'gone' });
    const behind = newLrp({ appName: 'behind' });
    const fine = newLrp({ appName: 'fine' });
    for (const l of [gone, behind, fine]) await desireAndConverge(e, l);

    await expect(syncWatched(e, SYNC_LOCK_TTL_MS)).resolves.toMatchObject({ converging: 0 });
    expect(await pendingConverges(e.producer)).toEqual([]);

    await workloadVerbs(e.kube, kind).delete(NS, workloadName(gone));
    await e.store.update(behind.processGuid, { instances: 7, annotation: 'not yet converged' });
    await expect(syncWatched(e, SYNC_LOCK_TTL_MS)).resolves.toMatchObject({ converging: 2 });
    expect(await pendingConverges(e.producer)).toEqual([gone.processGuid, behind.processGuid].sort());

    // Once converged, the next sync finds nothing to do.
    await convergeLrp(e.deps, gone.processGuid);
    await convergeLrp(e.deps, behind.processGuid);
    await expect(syncWatched(e, SYNC_LOCK_TTL_MS)).resolves.toMatchObject({ converging: 0 });
    expect(await workloadOf(e, gone)).toBeDefined();
    expect((await workloadOf(e, behind))!.spec!.replicas).toBe(7);
  });

  it('rebuilds a record Redis lost from the workload, and lists it in GET /apps again', async () => {
    const e = await suite.newEnv(kind);
    const original = newLrp({ instances: 3 });
    await desireAndConverge(e, original);
    const updated = (await e.store.update(original.processGuid, {
      instances: 4,
      annotation: '1700000000.0',
    }))!;
    await convergeLrp(e.deps, original.processGuid);
    const template = (await workloadOf(e, original))!.spec!.template;

    // As a flush would: the record and its scheduling info are gone.
    await e.redis.del(e.store.keys.lrp(original.processGuid));
    await e.redis.hdel(e.store.keys.schedulingInfos, original.processGuid);
    expect((await schedulingInfos(e.store)).has(original.processGuid)).toBe(false);

    await expect(syncWatched(e, SYNC_LOCK_TTL_MS)).resolves.toMatchObject({ adopted: 1 });

    const record = await e.store.get(original.processGuid);
    expect(record?.state).toBe('desired');
    // Everything, the registry credentials included (from the Secret).
    expect(record?.state === 'desired' ? record.lrp : undefined).toEqual(updated.lrp);
    expect((await schedulingInfos(e.store)).get(original.processGuid)).toBe('1700000000.0');
    expect(await pendingConverges(e.producer)).toEqual([original.processGuid]);

    // The converge the sync asked for re-stamps the workload without rolling its pods.
    await expect(convergeLrp(e.deps, original.processGuid)).resolves.toMatchObject({
      kind: 'converged',
      action: 'updated',
    });
    const d = (await workloadOf(e, original))!;
    expect(d.spec!.template).toEqual(template);
    expect(d.metadata.annotations![ANNOTATION_GENERATION]).toBe(String(record!.generation));
  });

  it('rebuilds a lost record without credentials when the Secret is lost as well', async () => {
    const e = await suite.newEnv(kind);
    const original = newLrp();
    await desireAndConverge(e, original);
    await e.redis.del(e.store.keys.lrp(original.processGuid));
    await e.redis.hdel(e.store.keys.schedulingInfos, original.processGuid);
    await e.kube.secrets.delete(NS, registrySecretName(original));

    await syncWatched(e, SYNC_LOCK_TTL_MS);
    const { registry: _r, ...withoutRegistry } = original;
    const record = await e.store.get(original.processGuid);
    expect(record?.state === 'desired' ? record.lrp : undefined).toEqual(withoutRegistry);
  });

  it('keeps a stopped LRP in GET /apps while its workload exists, and drops it once gone', async () => {
    const e = await suite.newEnv(kind);
    const lrp = newLrp();
    const other = newLrp({ appName: 'other' });
    await desireAndConverge(e, lrp);
    await desireAndConverge(e, other);
    await e.store.stop(lrp.processGuid, lrp.guid, lrp.version);

    await expect(syncWatched(e, SYNC_LOCK_TTL_MS)).resolves.toMatchObject({ converging: 1, adopted: 0 });
    let infos = await schedulingInfos(e.store);
    expect(infos.get(lrp.processGuid)).toBe(lrp.annotation);
    expect(infos.get(other.processGuid)).toBe(other.annotation);
    expect(await pendingConverges(e.producer)).toEqual([lrp.processGuid]);
    // The tombstone stays a tombstone: the sync does not adopt what was stopped.
    expect((await e.store.get(lrp.processGuid))?.state).toBe('stopped');

    await convergeLrp(e.deps, lrp.processGuid);
    await syncWatched(e, SYNC_LOCK_TTL_MS);
    infos = await schedulingInfos(e.store);
    expect(infos.has(lrp.processGuid)).toBe(false);
    expect(infos.get(other.processGuid)).toBe(other.annotation);
  });

  it('keeps the older of two workloads of one LRP (one of each kind) and converges it', async () => {
    const e = await suite.newEnv(kind);
    const lrp = newLrp({ instances: 2 });
    await desireAndConverge(e, lrp);
    const older = (await workloadOf(e, lrp))!;
    // After the mode changed and Redis lost the record, a fresh desire made the other kind too.
    const other = workloadVerbs(e.kube, OTHER_KIND[kind]);
    await new Promise((r) => setTimeout(r, 1100)); // a later creationTimestamp (whole seconds)
    await other.create(NS, other.build(lrp, e.deps));

    await expect(syncWatched(e, SYNC_LOCK_TTL_MS)).resolves.toMatchObject({ workloads: 2, twinsDeleted: 1 });
    expect(await other.get(NS, workloadName(lrp))).toBeUndefined();
    expect((await workloadOf(e, lrp))?.metadata.uid).toBe(older.metadata.uid);
    expect(await pendingConverges(e.producer)).toEqual([lrp.processGuid]);
    await expect(syncWatched(e, SYNC_LOCK_TTL_MS)).resolves.toMatchObject({ workloads: 1, twinsDeleted: 0 });
  });
});
