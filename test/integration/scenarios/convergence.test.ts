/**
 * End to end through the API, Redis, the workers and the simulated cluster: a CC-like convergence loop
 * over 200 apps, desire/stop races across 3 worker sets, a worker killed mid-job, and a Redis flush that
 * the sync repairs from the cluster.
 */
import type { ChildProcess } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Queue } from 'bullmq';
import { Redis } from 'ioredis';
import { keys } from '@opi/state';
import { desireBody, uuid } from '@opi/contract/testing';
import {
  NAMESPACE,
  type Service,
  call,
  deployedGuids,
  eventually,
  schedulingInfos,
  spawnWorkerProcess,
  startService,
  WORKLOAD_KIND,
} from '../../support/service.js';

async function lrpQueueIdle(s: Service): Promise<boolean> {
  const q = new Queue('lrp', { connection: s.redis, prefix: s.settings.queuePrefix });
  const c = await q.getJobCounts('waiting', 'active', 'delayed', 'prioritized');
  await q.close();
  const asked = await s.redis.llen(keys(s.settings.queuePrefix).inbox);
  return (
    asked === 0 && c['waiting'] === 0 && c['active'] === 0 && c['delayed'] === 0 && c['prioritized'] === 0
  );
}

describe('a CC-like convergence loop over 200 apps', () => {
  let s: Service;
  beforeAll(async () => {
    s = await startService({ workers: 2 });
  });
  afterAll(async () => {
    await s.close();
  });

  it('desires, updates, scales and replaces versions, with GET /apps right after each step', async () => {
    const apps = Array.from({ length: 200 }, (_, i) => ({ guid: uuid(i, 'c0ffee'), version: uuid(i, 'v1') }));
    const pg = (a: { guid: string; version: string }): string => `${a.guid}-${a.version}`;

    // 1. Desire: every LRP is listed at once, before any Deployment exists, so CC does not desire it again.
    for (const a of apps) {
      expect(
        (await call(s.base, 'PUT', `/apps/${pg(a)}`, desireBody(a.guid, a.version, { last_updated: 'a1' })))
          .status,
      ).toBe(202);
    }
    let infos = await schedulingInfos(s.base);
    expect(infos.size).toBe(200);
    for (const a of apps) expect(infos.get(pg(a))).toBe('a1');
    await eventually(async () => (await deployedGuids(s)).size === 200, '200 Deployments');

    // 2. CC's next pass finds nothing missing: re-desiring is a no-op.
    expect(
      (
        await call(
          s.base,
          'PUT',
          `/apps/${pg(apps[0]!)}`,
          desireBody(apps[0]!.guid, apps[0]!.version, { last_updated: 'a1' }),
        )
      ).status,
    ).toBe(202);

    // 3. Update every annotation: the new value is what GET /apps echoes, byte for byte.
    for (const a of apps) {
      const r = await call(s.base, 'POST', `/apps/${pg(a)}`, {
        guid: a.guid,
        version: a.version,
        update: { instances: 1, annotation: 'a2 ✓' },
      });
      expect(r.status).toBe(200);
    }
    infos = await schedulingInfos(s.base);
    for (const a of apps) expect(infos.get(pg(a))).toBe('a2 ✓');

    // 4. Scale 20 apps to 3 instances.
    const scaled = apps.slice(0, 20);
    for (const a of scaled) {
      await call(s.base, 'POST', `/apps/${pg(a)}`, {
        guid: a.guid,
        version: a.version,
        update: { instances: 3, annotation: 'a3' },
      });
    }
    await eventually(async () => {
      const d = await deployedGuids(s);
      return scaled.every((a) => d.get(pg(a)) === 3);
    }, 'scaled Deployments');
    const inst = await eventually(async () => {
      const r = await call(s.base, 'GET', `/apps/${scaled[0]!.guid}/${scaled[0]!.version}/instances`);
      const body = JSON.parse(r.text) as { instances: { index: number; state: string }[] };
      return body.instances.length === 3 && body.instances.every((i) => i.state === 'RUNNING')
        ? body
        : undefined;
    }, 'three RUNNING instances');
    expect(inst.instances.map((i) => i.index)).toEqual([0, 1, 2]);

    // 5. New versions for 50 apps, then CC stops the old ones.
    const moved = apps.slice(100, 150);
    for (const a of moved) {
      const v2 = uuid(Number.parseInt(a.version.slice(-12), 16), 'v2');
      expect(
        (await call(s.base, 'PUT', `/apps/${a.guid}-${v2}`, desireBody(a.guid, v2, { last_updated: 'b1' })))
          .status,
      ).toBe(202);
      expect((await call(s.base, 'PUT', `/apps/${a.guid}/${a.version}/stop`)).status).toBe(200);
    }
    const v2s = new Set(
      moved.map((a) => `${a.guid}-${uuid(Number.parseInt(a.version.slice(-12), 16), 'v2')}`),
    );
    const oldOnes = new Set(moved.map(pg));
    // Eventually the cluster and GET /apps hold exactly the wanted set: old versions gone, new ones there.
    await eventually(async () => {
      const d = await deployedGuids(s);
      const now = await schedulingInfos(s.base);
      const want = new Set([...apps.map(pg).filter((x) => !oldOnes.has(x)), ...v2s]);
      const same = (m: Map<string, unknown>): boolean =>
        m.size === want.size && [...want].every((x) => m.has(x));
      return same(d) && same(now);
    }, 'the cluster and GET /apps to hold exactly the wanted LRPs');
  }, 240_000);
});

describe('desire, stop and desire again in quick succession, with 3 workers', () => {
  let s: Service;
  beforeAll(async () => {
    s = await startService({ workers: 3 });
  });
  afterAll(async () => {
    await s.close();
  });

  it('ends in the state of the last request, 50 times over', async () => {
    const ending = Array.from({ length: 50 }, (_, i) => ({ guid: uuid(i, 'race1'), version: uuid(i, 'v1') }));
    const gone = Array.from({ length: 50 }, (_, i) => ({ guid: uuid(i, 'race2'), version: uuid(i, 'v1') }));
    await Promise.all([
      ...ending.map(async (a) => {
        const p = `${a.guid}-${a.version}`;
        await call(s.base, 'PUT', `/apps/${p}`, desireBody(a.guid, a.version));
        await call(s.base, 'PUT', `/apps/${a.guid}/${a.version}/stop`);
        await call(s.base, 'PUT', `/apps/${p}`, desireBody(a.guid, a.version));
      }),
      ...gone.map(async (a) => {
        const p = `${a.guid}-${a.version}`;
        await call(s.base, 'PUT', `/apps/${p}`, desireBody(a.guid, a.version));
        await call(s.base, 'PUT', `/apps/${a.guid}/${a.version}/stop`);
        await call(s.base, 'PUT', `/apps/${p}`, desireBody(a.guid, a.version));
        await call(s.base, 'PUT', `/apps/${a.guid}/${a.version}/stop`);
      }),
    ]);
    await eventually(async () => lrpQueueIdle(s), 'the queue to drain', 120_000);
    const d = await deployedGuids(s);
    for (const a of ending) expect(d.has(`${a.guid}-${a.version}`)).toBe(true);
    for (const a of gone) expect(d.has(`${a.guid}-${a.version}`)).toBe(false);
    // A stopped LRP stays listed while its Deployment exists; the next sync drops it once it is gone.
    await eventually(
      async () => {
        const m = await schedulingInfos(s.base);
        if (process.env['DEBUG_RACE'])
          console.log('infos', m.size, [...m.keys()].filter((k) => k.startsWith('race2')).length);
        return m.size === 50;
      },
      'GET /apps to list the 50',
      10_000,
    );
  }, 180_000);
});

describe('a worker killed mid-job', () => {
  let s: Service;
  let dir: string;
  const children: ChildProcess[] = [];
  beforeAll(async () => {
    // API only in-process; the workers are separate processes so one can be SIGKILLed.
    s = await startService({ workers: 0 });
    dir = await mkdtemp(join(tmpdir(), 'kill-'));
    await s.sim.writeKubeconfig(join(dir, 'kubeconfig'));
  });
  afterAll(async () => {
    for (const c of children) c.kill('SIGKILL');
    await s.close();
    await rm(dir, { recursive: true, force: true });
  });

  const spawnWorker = (): ChildProcess => {
    const child = spawnWorkerProcess(s, join(dir, 'kubeconfig'), { OPI_RESYNC_INTERVAL_MS: '60000' });
    children.push(child);
    return child;
  };

  it('loses nothing: another worker takes the job again', async () => {
    // Workload creates hang for a while, so the job is surely in flight when the worker dies.
    s.sim.faults.set({ latencyMs: 4000, verbs: ['create'], resources: [`${WORKLOAD_KIND}s`] });
    const first = spawnWorker();
    const a = { guid: uuid(1, 'kill'), version: uuid(1, 'v1') };
    expect(
      (await call(s.base, 'PUT', `/apps/${a.guid}-${a.version}`, desireBody(a.guid, a.version))).status,
    ).toBe(202);
    const q = new Queue('lrp', { connection: s.redis, prefix: s.settings.queuePrefix });
    await eventually(async () => (await q.getActiveCount()) === 1, 'the job to be active');
    first.kill('SIGKILL');
    s.sim.faults.reset();
    spawnWorker();
    await eventually(
      async () => (await deployedGuids(s)).has(`${a.guid}-${a.version}`),
      'the workload',
      60_000,
    );
    await eventually(async () => (await q.getCompletedCount()) >= 1, 'the job to complete');
    expect(await q.getFailedCount()).toBe(0);
    await q.close();
  }, 120_000);
});

describe('a Redis flush', () => {
  let s: Service;
  // Its own database per workload mode: the two jest projects run at the same time.
  const DB = WORKLOAD_KIND === 'deployment' ? 7 : 8;
  beforeAll(async () => {
    s = await startService({ workers: 1, redisDb: DB });
  });
  afterAll(async () => {
    await s.close();
  });

  it('is repaired by the sync: the desired state comes back from the cluster', async () => {
    const apps = Array.from({ length: 10 }, (_, i) => ({ guid: uuid(i, 'flush'), version: uuid(i, 'v1') }));
    for (const [i, a] of apps.entries()) {
      await call(
        s.base,
        'PUT',
        `/apps/${a.guid}-${a.version}`,
        desireBody(a.guid, a.version, { last_updated: `t${i}`, instances: 2 }),
      );
    }
    await eventually(async () => (await deployedGuids(s)).size === 10, '10 Deployments');
    const db = new Redis(`redis://127.0.0.1:6379/${DB}`);
    await db.flushdb();
    db.disconnect();
    expect((await schedulingInfos(s.base)).size).toBe(0);
    // The flush also removed the sync's schedule; the workers put it back on their own.
    const infos = await eventually(
      async () => {
        const m = await schedulingInfos(s.base);
        return m.size === 10 ? m : undefined;
      },
      'the sync to rebuild the desired state',
      60_000,
    );
    for (const [i, a] of apps.entries()) expect(infos.get(`${a.guid}-${a.version}`)).toBe(`t${i}`);
    const one = await call(s.base, 'GET', `/apps/${apps[3]!.guid}/${apps[3]!.version}`);
    expect(JSON.parse(one.text)).toEqual({
      desired_lrp: {
        process_guid: `${apps[3]!.guid}-${apps[3]!.version}`,
        instances: 2,
        annotation: 't3',
        image: 'registry.example/app:1',
      },
    });
    expect((await deployedGuids(s)).size).toBe(10);
    expect(NAMESPACE).toBe('cf-workloads');
  }, 120_000);
});
