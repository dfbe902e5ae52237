/**
 * Bad input to the app routes, against real Redis and BullMQ: refused with the contract's
 * `{"error": {"message"}}` naming the field (or 413, or 404 for no route), nothing recorded or enqueued.
 */
import { randomUUID } from 'node:crypto';
import { describe, expect, it } from '@jest/globals';
import type { Express } from 'express';
import request from 'supertest';
import { clientDesireBody, type Lrp, newLrp, updateBody } from '@opi/contract/testing';
import {
  BODY_LIMIT,
  SMALL_BODY_LIMIT,
  apiProbes,
  expectErrorBody,
  useApiApp,
} from '../../support/api-app.js';

const env = useApiApp();
const { desire, fingerprint } = apiProbes(env);

describe('bad input', () => {
  async function expectNothingChanged(lrp: Lrp, send: () => Promise<request.Response>, status: number) {
    const before = await fingerprint(lrp);
    const res = await send();
    expect(res.status).toBe(status);
    expect(await fingerprint(lrp)).toEqual(before);
    expect(await env.redis.exists(env.store.keys.lrp(lrp.processGuid))).toBe(0);
    return res;
  }

  const put = (lrp: Lrp, app: Express = env.app) =>
    request(app).put(`/apps/${lrp.processGuid}`).set('Content-Type', 'application/json');

  it('answers 400 to malformed JSON', async () => {
    const lrp = newLrp();
    const res = await expectNothingChanged(lrp, () => put(lrp).send('{"guid": "a",'), 400);
    expectErrorBody(res.body, 'JSON');
  });

  it('answers 413 to a body over the limit', async () => {
    const lrp = newLrp();
    const body = clientDesireBody(lrp, { environment: { BIG: 'x'.repeat(SMALL_BODY_LIMIT) } });
    const res = await expectNothingChanged(lrp, () => put(lrp, env.small).send(body), 413);
    expectErrorBody(res.body, String(SMALL_BODY_LIMIT));
  });

  it('accepts a body under the small limit on the same app', async () => {
    const lrp = newLrp();
    const res = await put(lrp, env.small).send(clientDesireBody(lrp));
    expect(res.status).toBe(202);
  });

  it.each<[string, Record<string, unknown>, string]>([
    ['instances as a string', { instances: '2' }, 'instances'],
    ['memory_mb as a string', { memory_mb: '256' }, 'memory_mb'],
    ['ports as a number', { ports: 8080 }, 'ports'],
    ['environment as an array', { environment: [{ name: 'A', value: 'b' }] }, 'environment'],
    ['last_updated as a number', { last_updated: 1589212345.123456 }, 'last_updated'],
    ['missing memory_mb', { memory_mb: undefined }, 'memory_mb'],
    ['missing lifecycle', { lifecycle: undefined }, 'lifecycle'],
    ['missing guid', { guid: undefined }, 'guid'],
    ['disk_mb 0', { disk_mb: 0 }, 'disk_mb'],
    ['cpu_weight 101', { cpu_weight: 101 }, 'cpu_weight'],
    ['port 70000', { ports: [70000] }, 'ports.0'],
    ['an empty env var name', { environment: { '': 'x' } }, 'environment.'],
    ['an unknown health_check_type', { health_check_type: 'tcp' }, 'health_check_type'],
    [
      'both lifecycles',
      {
        lifecycle: {
          docker_lifecycle: { image: 'a' },
          buildpack_lifecycle: { droplet_hash: 'ab', droplet_guid: 'd' },
        },
      },
      'lifecycle',
    ],
  ])('answers 400 naming the field for %s', async (_what, overrides, field) => {
    const lrp = newLrp();
    const res = await expectNothingChanged(lrp, () => put(lrp).send(clientDesireBody(lrp, overrides)), 400);
    expectErrorBody(res.body, `${field}:`);
  });

  it('answers 400 when the path process_guid differs from the body', async () => {
    const lrp = newLrp();
    const other = newLrp();
    const res = await expectNothingChanged(
      lrp,
      () => request(env.app).put(`/apps/${lrp.processGuid}`).send(clientDesireBody(other)),
      400,
    );
    expectErrorBody(res.body, 'process_guid');
    expect(await env.redis.exists(env.store.keys.lrp(other.processGuid))).toBe(0);
  });

  it('answers 400 when the body process_guid is not guid-version', async () => {
    const lrp = newLrp();
    const res = await expectNothingChanged(
      lrp,
      () => put(lrp).send(clientDesireBody(lrp, { guid: randomUUID() })),
      400,
    );
    expectErrorBody(res.body, 'process_guid');
  });

  it('answers 400 to an update whose path differs from guid and version', async () => {
    const lrp = newLrp();
    await desire(lrp);
    const other = newLrp();
    const before = await fingerprint(lrp);
    const res = await request(env.app)
      .post(`/apps/${lrp.processGuid}`)
      .send(updateBody(other, { instances: 9, annotation: 'x' }));
    expect(res.status).toBe(400);
    expectErrorBody(res.body, 'process_guid');
    expect(await fingerprint(lrp)).toEqual(before);
  });

  it.each<[string, Record<string, unknown>, string]>([
    ['missing update', {}, 'update'],
    ['instances as a string', { update: { instances: '2', annotation: 'a' } }, 'update.instances'],
    ['negative instances', { update: { instances: -1, annotation: 'a' } }, 'update.instances'],
    ['missing annotation', { update: { instances: 1 } }, 'update.annotation'],
    ['image as a number', { update: { instances: 1, annotation: 'a', image: 1 } }, 'update.image'],
  ])('answers 400 to an update with %s, naming the field', async (_what, body, field) => {
    const lrp = newLrp();
    await desire(lrp);
    const before = await fingerprint(lrp);
    const res = await request(env.app)
      .post(`/apps/${lrp.processGuid}`)
      .send({ guid: lrp.guid, version: lrp.version, ...body });
    expect(res.status).toBe(400);
    expectErrorBody(res.body, `${field}:`);
    expect(await fingerprint(lrp)).toEqual(before);
  });

  it('answers 400 to an empty body', async () => {
    const lrp = newLrp();
    const res = await expectNothingChanged(lrp, () => put(lrp).send(''), 400);
    expectErrorBody(res.body);
  });

  it('answers 400 to a request without a body', async () => {
    const lrp = newLrp();
    const res = await expectNothingChanged(lrp, () => request(env.app).put(`/apps/${lrp.processGuid}`), 400);
    expectErrorBody(res.body);
  });

  it('answers 400 to an update without a body', async () => {
    const lrp = newLrp();
    await desire(lrp);
    const before = await fingerprint(lrp);
    const res = await request(env.app).post(`/apps/${lrp.processGuid}`);
    expect(res.status).toBe(400);
    expectErrorBody(res.body);
    expect(await fingerprint(lrp)).toEqual(before);
  });

  it.each<[string, string]>([
    ['a JSON array', '[]'],
    ['an array holding the body', JSON.stringify([{ guid: 'a' }])],
    ['null', 'null'],
    ['a string', '"body"'],
    ['a number', '42'],
    ['10,000 nested arrays', '['.repeat(10_000) + ']'.repeat(10_000)],
  ])('answers 400 naming the body to %s', async (_what, raw) => {
    const lrp = newLrp();
    const res = await expectNothingChanged(lrp, () => put(lrp).send(raw), 400);
    expectErrorBody(res.body, 'body');
  });

  it('answers 400 naming the field to 10,000 nested arrays in a field', async () => {
    const lrp = newLrp();
    const raw = JSON.stringify(clientDesireBody(lrp, { ports: 'NESTED' })).replace(
      '"NESTED"',
      '['.repeat(10_000) + ']'.repeat(10_000),
    );
    const res = await expectNothingChanged(lrp, () => put(lrp).send(raw), 400);
    expectErrorBody(res.body, 'ports');
  });

  it('accepts 10,000 nested arrays in a field it ignores', async () => {
    const lrp = newLrp();
    const raw = JSON.stringify(clientDesireBody(lrp, { log_guid: 'NESTED' })).replace(
      '"NESTED"',
      '['.repeat(10_000) + ']'.repeat(10_000),
    );
    const res = await put(lrp).send(raw);
    expect(res.status).toBe(202);
  });

  it('answers 400 to 30,000 nested arrays just under the body limit', async () => {
    const lrp = newLrp();
    const raw = '['.repeat(30_000) + ']'.repeat(30_000);
    expect(raw.length).toBeLessThan(BODY_LIMIT);
    const res = await expectNothingChanged(lrp, () => put(lrp).send(raw), 400);
    expectErrorBody(res.body, 'body');
  });

  it('answers 413 or 400, never 500, to 100,000 nested arrays', async () => {
    const lrp = newLrp();
    const raw = '['.repeat(100_000) + ']'.repeat(100_000);
    const before = await fingerprint(lrp);
    const res = await put(lrp).send(raw);
    expect([400, 413]).toContain(res.status);
    expectErrorBody(res.body);
    expect(await fingerprint(lrp)).toEqual(before);
  });

  it.each<[string, string]>([
    ['GET', '/nope'],
    ['GET', '/apps/a/b/c/d'],
    ['DELETE', `/apps/${randomUUID()}-${randomUUID()}`],
    ['PATCH', '/apps'],
    ['GET', '/tasks-not-here'],
  ])('answers 404 with an error body to %s %s', async (method, path) => {
    const before = await fingerprint();
    const res = await request(env.app)[method.toLowerCase() as 'get' | 'delete' | 'patch'](path);
    expect(res.status).toBe(404);
    expectErrorBody(res.body, method, path);
    expect(await fingerprint()).toEqual(before);
  });
});
