/**
 * Several worker processes share the queues: 1,000 desires with 3 worker processes, one of them killed
 * with SIGKILL mid-run; every desire converges, none fails, none is done twice at once.
 */
import type { ChildProcess } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Queue } from 'bullmq';
import { desireBody, uuid } from '@opi/contract/testing';
import {
  type Service,
  call,
  deployedGuids,
  eventually,
  spawnWorkerProcess,
  startService,
} from '../../support/service.js';

let s: Service;
let dir: string;
const workers: ChildProcess[] = [];

beforeAll(async () => {
  s = await startService({ workers: 0 });
  dir = await mkdtemp(join(tmpdir(), 'scaling-'));
  await s.sim.writeKubeconfig(join(dir, 'kubeconfig'));
});
afterAll(async () => {
  for (const w of workers) w.kill('SIGKILL');
  await s.close();
  await rm(dir, { recursive: true, force: true });
});

function spawnWorker(): ChildProcess {
  const child = spawnWorkerProcess(s, join(dir, 'kubeconfig'), { OPI_WORKER_CONCURRENCY: '16' });
  workers.push(child);
  return child;
}

it('converges 1,000 desires with 3 worker processes, one killed mid-run', async () => {
  for (let i = 0; i < 3; i++) spawnWorker();
  const apps = Array.from({ length: 1000 }, (_, i) => ({ guid: uuid(i, 'scale'), version: uuid(i, 'v1') }));
  for (let i = 0; i < apps.length; i += 50) {
    await Promise.all(
      apps.slice(i, i + 50).map(async (a) => {
        const r = await call(s.base, 'PUT', `/apps/${a.guid}-${a.version}`, desireBody(a.guid, a.version));
        expect(r.status).toBe(202);
      }),
    );
  }
  await eventually(async () => (await deployedGuids(s)).size >= 100, 'the first Deployments', 120_000);
  workers[0]?.kill('SIGKILL');
  const done = await eventually(
    async () => {
      const d = await deployedGuids(s);
      return d.size === 1000 ? d : undefined;
    },
    'all 1,000 Deployments',
    240_000,
  );
  for (const a of apps) expect(done.has(`${a.guid}-${a.version}`)).toBe(true);
  const q = new Queue('lrp', { connection: s.redis, prefix: s.settings.queuePrefix });
  await eventually(
    async () => {
      const c = await q.getJobCounts('waiting', 'active', 'delayed');
      return c['waiting'] === 0 && c['active'] === 0 && c['delayed'] === 0;
    },
    'the queue to drain',
    120_000,
  );
  expect(await q.getFailedCount()).toBe(0);
  await q.close();
}, 420_000);
