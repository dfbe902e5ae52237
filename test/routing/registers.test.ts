/**
 * The service against CF's real gorouter over a real NATS: what gorouter's own table holds after a
 * desire, a route update, a scale, an instance restart and a stop, and that gorouter refused none of our
 * messages.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { connect } from '@nats-io/transport-node';
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

const guid = uuid(1, 'route');
const version = uuid(1, 'v1');
const pg = `${guid}-${version}`;
const host = `hello-${guid.slice(-6)}.example.com`;

async function endpoints(uri: string) {
  return (await rig.routes())[uri] ?? [];
}

d('gorouter over NATS', () => {
  it('holds every Ready instance of a desired app at its route, with the app guid, index and tags', async () => {
    const body = desireBody(guid, version, {
      instances: 2,
      routes: { 'cf-router': [{ hostname: host, port: 8080 }] },
    });
    expect((await call(s.base, 'PUT', `/apps/${pg}`, body)).status).toBe(202);
    const eps = await eventually(async () => {
      const e = await endpoints(host);
      return e.length === 2 ? e : undefined;
    }, `two endpoints of ${host} in gorouter`);
    for (const e of eps) {
      expect(isLoopback(e.address)).toBe(true);
      expect(e.address.endsWith(':8080')).toBe(true);
      expect(e.tags).toMatchObject({
        component: 'route-emitter',
        app_id: guid,
        source_id: guid,
        process_id: guid,
        process_type: 'web',
        space_name: 'dev',
      });
      expect(e.private_instance_id).toBe(e.tags?.['process_instance_id']);
    }
    expect(new Set(eps.map((e) => e.tags?.['instance_id']))).toEqual(new Set(['0', '1']));
  });

  it('adds a mapped route and removes an unmapped one, leaving the others', async () => {
    const extra = `more-${guid.slice(-6)}.example.com/api`;
    const update = (routes: { hostname: string; port: number }[], annotation: string) =>
      call(s.base, 'POST', `/apps/${pg}`, {
        guid,
        version,
        update: { instances: 2, routes: { 'cf-router': routes }, annotation },
      });
    expect(
      (
        await update(
          [
            { hostname: host, port: 8080 },
            { hostname: extra, port: 8080 },
          ],
          'u1',
        )
      ).status,
    ).toBe(200);
    await eventually(async () => (await endpoints(extra)).length === 2, `${extra} in gorouter`);
    expect((await update([{ hostname: extra, port: 8080 }], 'u2')).status).toBe(200);
    await eventually(async () => (await endpoints(host)).length === 0, `${host} gone from gorouter`);
    expect(await endpoints(extra)).toHaveLength(2);
    expect((await update([{ hostname: host, port: 8080 }], 'u3')).status).toBe(200);
    await eventually(
      async () => (await endpoints(host)).length === 2 && (await endpoints(extra)).length === 0,
      'the route back, the other gone',
    );
  });

  it('follows a scale up and down', async () => {
    const scale = (instances: number, annotation: string) =>
      call(s.base, 'POST', `/apps/${pg}`, {
        guid,
        version,
        update: { instances, routes: { 'cf-router': [{ hostname: host, port: 8080 }] }, annotation },
      });
    expect((await scale(4, 's1')).status).toBe(200);
    await eventually(async () => (await endpoints(host)).length === 4, 'four endpoints');
    expect((await scale(1, 's2')).status).toBe(200);
    const one = await eventually(async () => {
      const e = await endpoints(host);
      return e.length === 1 ? e : undefined;
    }, 'one endpoint');
    expect(one[0]?.tags?.['instance_id']).toBe('0');
  });

  it('restarts one instance (stop/:index): unregistered before its pod is deleted, its replacement registered', async () => {
    const [before] = await endpoints(host);
    const ip = before?.address.split(':')[0];
    expect(ip && isLoopback(ip)).toBe(true);
    // Both unregisters of that address: the stop job's before its DELETE, the emitter's once it sees the
    // pod terminating (one alone would be the emitter's, after gorouter could still send it requests).
    const nc = await connect({ servers: rig.natsUrl });
    const unregisters: string[] = [];
    nc.subscribe('router.unregister', {
      callback: (_e, m) => {
        if (m.json<{ host: string }>().host === ip) unregisters.push(m.string());
      },
    });
    try {
      await nc.flush();
      expect((await call(s.base, 'PUT', `/apps/${guid}/${version}/stop/0`)).status).toBe(200);
      const after = await eventually(async () => {
        const e = await endpoints(host);
        return e.length === 1 && e[0]?.address !== before?.address ? e : undefined;
      }, 'the replacement in gorouter, the stopped instance gone');
      expect(after[0]?.tags?.['instance_id']).toBe('0');
      await eventually(async () => Promise.resolve(unregisters.length >= 2), 'both unregisters');
    } finally {
      await nc.close();
    }
  });

  it('removes every endpoint when the app is stopped, and gorouter refused no message', async () => {
    expect((await call(s.base, 'PUT', `/apps/${guid}/${version}/stop`)).status).toBe(200);
    await eventually(async () => (await endpoints(host)).length === 0, `${host} gone after stop`);
    expect(await rig.validationErrors()).toEqual([]);
  });
});
