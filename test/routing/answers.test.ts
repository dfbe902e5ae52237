/**
 * A CF user's view through CF's real gorouter: an app desired with a route answers there from each of
 * its instances; `cf map-route` and `unmap-route` (CC's updates) add and remove hostnames; a path route
 * answers only under its path; a stopped app is gorouter's 404 `unknown_route`. Every pod address is
 * checked to be loopback before any request can reach it.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { desireBody, uuid } from '@opi/contract/testing';
import { type Service, call, eventually, startService } from '../support/service.js';
import { type RouterRig, isLoopback, routerRigAvailable, startRouterRig } from '@opi/router-rig';

const available = routerRigAvailable();
const d = available ? describe : describe.skip;

let rig: RouterRig;
let s: Service;

beforeAll(async () => {
  if (!available) return;
  rig = await startRouterRig();
  s = await startService({ env: { OPI_ROUTING: 'nats', OPI_NATS_URL: rig.natsUrl } });
}, 60_000);
afterAll(async () => {
  await s?.close();
  await rig?.close();
});

const guid = uuid(2, 'answer');
const version = uuid(2, 'v1');
const pg = `${guid}-${version}`;
const host = `hello-${guid.slice(-6)}.example.com`;
const other = `other-${guid.slice(-6)}.example.com`;

/** Every pod the cluster holds has a loopback address (or none yet): asserted before traffic. */
async function podsAreLoopback(): Promise<void> {
  const pods = await s.core.listNamespacedPod({ namespace: 'cf-workloads' });
  for (const p of pods.items) {
    const ip = p.status?.podIP;
    if (ip) expect(isLoopback(ip)).toBe(true);
  }
}

const update = (routes: { hostname: string; port: number }[], annotation: string, instances = 2) =>
  call(s.base, 'POST', `/apps/${pg}`, {
    guid,
    version,
    update: { instances, routes: { 'cf-router': routes }, annotation },
  });

/** The pods that answered `n` requests to `h` (undefined while any request failed). */
async function answering(h: string, n: number, path = '/'): Promise<Set<string> | undefined> {
  const pods = new Set<string>();
  for (let i = 0; i < n; i++) {
    const r = await rig.get(h, path);
    if (r.status !== 200) return undefined;
    const body = JSON.parse(r.body) as { pod: string; host: string; path: string };
    expect(body.host).toBe(h);
    expect(body.path).toBe(path);
    pods.add(body.pod);
  }
  return pods;
}

d('an app through gorouter', () => {
  it('answers at its route from both instances in turn', async () => {
    const body = desireBody(guid, version, {
      instances: 2,
      routes: { 'cf-router': [{ hostname: host, port: 8080 }] },
    });
    expect((await call(s.base, 'PUT', `/apps/${pg}`, body)).status).toBe(202);
    await eventually(async () => {
      await podsAreLoopback();
      const pods = await answering(host, 4);
      return pods?.size === 2;
    }, `both instances answering at ${host}`);
  });

  it("answers at a mapped route, and a route unmapped is gorouter's 404 unknown_route", async () => {
    expect(
      (
        await update(
          [
            { hostname: host, port: 8080 },
            { hostname: other, port: 8080 },
          ],
          'm1',
        )
      ).status,
    ).toBe(200);
    await eventually(async () => (await answering(other, 2)) !== undefined, `${other} answering`);
    expect((await update([{ hostname: other, port: 8080 }], 'm2')).status).toBe(200);
    const gone = await eventually(async () => {
      const r = await rig.get(host);
      return r.status === 404 ? r : undefined;
    }, `${host} unknown to gorouter`);
    expect(gone.headers['x-cf-routererror']).toBe('unknown_route');
    expect(await answering(other, 2)).toBeDefined();
  });

  it('answers a path route only under its path', async () => {
    const api = `${host}/api`;
    expect((await update([{ hostname: api, port: 8080 }], 'p1')).status).toBe(200);
    await eventually(async () => (await answering(host, 2, '/api/v1/x')) !== undefined, `${api} answering`);
    expect((await rig.get(host, '/api')).status).toBe(200);
    expect((await rig.get(host, '/')).status).toBe(404);
    expect((await rig.get(host, '/apix')).status).toBe(404);
  });

  it("is gorouter's 404 once stopped, and gorouter refused none of our messages", async () => {
    expect((await update([{ hostname: host, port: 8080 }], 'p2')).status).toBe(200);
    await eventually(async () => (await answering(host, 2)) !== undefined, `${host} answering again`);
    expect((await call(s.base, 'PUT', `/apps/${guid}/${version}/stop`)).status).toBe(200);
    await eventually(async () => (await rig.get(host)).status === 404, `${host} gone after stop`);
    expect(await rig.validationErrors()).toEqual([]);
  });
});
