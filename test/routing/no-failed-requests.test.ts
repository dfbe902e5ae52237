/**
 * Under a steady 20 requests/s through CF's real gorouter, a rolling deployment (a second LRP of the app
 * with the same route, then the first stopped) and a scale from 2 to 4 and back fail no request
 * (gorouter's own retries allowed, as in production).
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { desireBody, uuid } from '@opi/contract/testing';
import { type Service, call, eventually, startService } from '../support/service.js';
import { type RouterRig, isLoopback, routerRigAvailable, startRouterRig } from '@opi/router-rig';
import { steadyLoad } from '../support/steady-load.js';

const available = routerRigAvailable();
const d = available ? describe : describe.skip;

let rig: RouterRig;
let s: Service;

beforeAll(async () => {
  if (!available) return;
  rig = await startRouterRig();
  s = await startService({
    env: { OPI_ROUTING: 'nats', OPI_NATS_URL: rig.natsUrl },
    // An app draining on SIGTERM for a second, as CF apps are given time to.
    simBehaviour: { drainMs: 1000 },
  });
}, 60_000);
afterAll(async () => {
  await s?.close();
  await rig?.close();
});

const guid = uuid(3, 'steady');
const v1 = uuid(3, 'v1');
const v2 = uuid(3, 'v2');
const host = `steady-${guid.slice(-6)}.example.com`;
const routes = { 'cf-router': [{ hostname: host, port: 8080 }] };

async function endpoints(): Promise<string[]> {
  const eps = ((await rig.routes())[host] ?? []).map((e) => e.address);
  for (const a of eps) expect(isLoopback(a)).toBe(true);
  return eps;
}

/** The app's pods in the cluster (terminating ones included). */
async function podCount(version: string): Promise<number> {
  const pods = await s.core.listNamespacedPod({
    namespace: 'cf-workloads',
    labelSelector: `cloudfoundry.org/guid=${guid},cloudfoundry.org/version=${version}`,
  });
  return pods.items.length;
}

d('no failed request', () => {
  it('through a rolling deployment and a scale from 2 to 4 and back, at 20 requests/s', async () => {
    expect(
      (await call(s.base, 'PUT', `/apps/${guid}-${v1}`, desireBody(guid, v1, { instances: 2, routes })))
        .status,
    ).toBe(202);
    await eventually(async () => (await endpoints()).length === 2, 'v1 registered');
    await eventually(async () => (await rig.get(host)).status === 200, 'v1 answering');

    const load = steadyLoad(rig, host, 20);
    // Rolling deployment: CC desires the new process, then stops the old one once the new one runs.
    expect(
      (await call(s.base, 'PUT', `/apps/${guid}-${v2}`, desireBody(guid, v2, { instances: 2, routes })))
        .status,
    ).toBe(202);
    await eventually(async () => (await endpoints()).length === 4, 'v1 and v2 registered');
    expect((await call(s.base, 'PUT', `/apps/${guid}/${v1}/stop`)).status).toBe(200);
    await eventually(async () => (await endpoints()).length === 2 && (await podCount(v1)) === 0, 'v1 gone');

    const scale = (instances: number, annotation: string) =>
      call(s.base, 'POST', `/apps/${guid}-${v2}`, {
        guid,
        version: v2,
        update: { instances, routes, annotation },
      });
    expect((await scale(4, 's1')).status).toBe(200);
    await eventually(async () => (await endpoints()).length === 4, 'scaled to 4');
    await new Promise((r) => setTimeout(r, 1000));
    expect((await scale(2, 's2')).status).toBe(200);
    await eventually(async () => (await endpoints()).length === 2 && (await podCount(v2)) === 2, 'back to 2');
    await new Promise((r) => setTimeout(r, 1000));
    const result = await load.stop();

    expect(result.failed).toEqual([]);
    expect(result.sent).toBeGreaterThan(20);
    // Both versions served while both ran.
    expect(result.pods.size).toBeGreaterThanOrEqual(4);
  }, 180_000);
});
