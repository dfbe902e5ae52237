/**
 * Routes come back by themselves: after gorouter restarts (empty table, router.start), after NATS
 * restarts (both sides reconnect), and after the emitting worker is SIGKILLed (the next Lease holder
 * sends everything). gorouter prunes a route not registered again within 6 s here, so a route that still
 * answers long after a restart was sent again by us.
 */
import type { ChildProcess } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { CoordinationV1Api, KubeConfig } from '@kubernetes/client-node';
import { desireBody, uuid } from '@opi/contract/testing';
import { type Service, call, eventually, spawnWorkerProcess, startService } from '../support/service.js';
import { type RouterRig, isLoopback, routerRigAvailable, startRouterRig } from '@opi/router-rig';

const available = routerRigAvailable();
const d = available ? describe : describe.skip;
const PRUNE_AFTER_S = 6;

let rig: RouterRig;
let s: Service;
let dir: string;
const workers: ChildProcess[] = [];

const guid = uuid(4, 'restart');
const version = uuid(4, 'v1');
const host = `restart-${guid.slice(-6)}.example.com`;

function spawnWorker(): ChildProcess {
  const w = spawnWorkerProcess(s, join(dir, 'kubeconfig'), {
    OPI_ROUTING: 'nats',
    OPI_NATS_URL: rig.natsUrl,
    OPI_LEASE_DURATION_MS: '3000',
    OPI_LEASE_RENEW_DEADLINE_MS: '2000',
    OPI_LEASE_RETRY_PERIOD_MS: '500',
  });
  workers.push(w);
  return w;
}

beforeAll(async () => {
  if (!available) return;
  rig = await startRouterRig({
    DROPLET_STALE_THRESHOLD: `${PRUNE_AFTER_S}s`,
    PRUNE_STALE_DROPLETS_INTERVAL: '1s',
    START_RESPONSE_DELAY_INTERVAL: '1s',
  });
  s = await startService({ workers: 0 });
  dir = await mkdtemp(join(tmpdir(), 'routing-restarts-'));
  await s.sim.writeKubeconfig(join(dir, 'kubeconfig'));
  spawnWorker();
  spawnWorker();
  const routes = { 'cf-router': [{ hostname: host, port: 8080 }] };
  expect(
    (
      await call(
        s.base,
        'PUT',
        `/apps/${guid}-${version}`,
        desireBody(guid, version, { instances: 2, routes }),
      )
    ).status,
  ).toBe(202);
  await eventually(async () => {
    const eps = (await rig.routes())[host] ?? [];
    for (const e of eps) expect(isLoopback(e.address)).toBe(true);
    return eps.length === 2;
  }, 'the app registered');
}, 120_000);
afterAll(async () => {
  for (const w of workers) w.kill('SIGKILL');
  await s?.close();
  await rig?.close();
  if (dir) await rm(dir, { recursive: true, force: true });
});

const answers = async () => (await rig.get(host)).status === 200;

/** The route answers now and still after gorouter's prune threshold has passed twice. */
async function keepsAnswering(what: string): Promise<void> {
  await eventually(answers, what, 20_000);
  await new Promise((r) => setTimeout(r, 2 * PRUNE_AFTER_S * 1000));
  expect(await answers()).toBe(true);
}

d('routes after restarts', () => {
  it('answer again after gorouter restarts with an empty table', async () => {
    await rig.stopRouter();
    await rig.startRouter();
    await keepsAnswering('the route after gorouter restarted');
  }, 60_000);

  it('answer again after NATS restarts', async () => {
    await rig.stopNats();
    await new Promise((r) => setTimeout(r, 2000));
    await rig.startNats();
    await keepsAnswering('the route after NATS restarted');
  }, 60_000);

  it('answer again, and follow changes, after the emitting worker is SIGKILLed', async () => {
    const kc = new KubeConfig();
    kc.loadFromString(s.sim.kubeconfig());
    const leases = kc.makeApiClient(CoordinationV1Api);
    const holder = await eventually(async () => {
      const lease = await leases.readNamespacedLease({ name: 'opi-cache-writer', namespace: 'cf-workloads' });
      return lease.spec?.holderIdentity;
    }, 'the cache writer Lease held');
    const pid = Number(/-(\d+)-[0-9a-f]+$/.exec(holder)?.[1]);
    const emitting = workers.find((w) => w.pid === pid);
    expect(emitting).toBeDefined();
    emitting?.kill('SIGKILL');
    await keepsAnswering('the route after the emitting worker died');
    // The new holder also follows changes.
    const scaled = await call(s.base, 'POST', `/apps/${guid}-${version}`, {
      guid,
      version,
      update: { instances: 3, routes: { 'cf-router': [{ hostname: host, port: 8080 }] }, annotation: 'k1' },
    });
    expect(scaled.status).toBe(200);
    await eventually(
      async () => ((await rig.routes())[host] ?? []).length === 3,
      'the third instance registered',
    );
  }, 90_000);
});
