/**
 * The app routes when Redis cannot be reached: 503 with Retry-After (not a hang, nor a 404 for "no
 * record"), while bad input is still refused with 400.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import type { Express } from 'express';
import type { Redis } from 'ioredis';
import request from 'supertest';
import { JobProducer, producerConnection } from '@opi/queue';
import { clientDesireBody, newLrp, updateBody } from '@opi/contract/testing';
import { appOn, expectErrorBody } from '../../support/api-app.js';

const PREFIX = `test-api-${randomUUID().slice(0, 8)}`;

describe('when Redis is unreachable', () => {
  let down: Express;
  let deadRedis: Redis;
  let deadProducer: JobProducer;

  beforeAll(() => {
    // The API's own connection settings; only the teardown is shortened: ioredis keeps a timer for
    // disconnectTimeout (2 s) after disconnecting a socket that never connected.
    deadRedis = producerConnection('redis://127.0.0.1:1', { disconnectTimeout: 10 });
    deadRedis.on('error', () => {
      // Expected: nothing listens there.
    });
    deadProducer = new JobProducer({ connection: deadRedis, prefix: `${PREFIX}-down`, attempts: 1 });
    for (const q of Object.values(deadProducer.queues)) {
      q.on('error', () => {
        // Expected, as above.
      });
    }
    down = appOn(deadRedis, `${PREFIX}-down`, deadProducer);
  });

  afterAll(async () => {
    await deadProducer.close();
    deadRedis.disconnect();
  });

  const lrp = newLrp();
  it.each<[string, () => request.Test]>([
    ['GET /apps', () => request(down).get('/apps')],
    [
      'PUT /apps/:process_guid',
      () => request(down).put(`/apps/${lrp.processGuid}`).send(clientDesireBody(lrp)),
    ],
    [
      'POST /apps/:process_guid',
      () =>
        request(down)
          .post(`/apps/${lrp.processGuid}`)
          .send(updateBody(lrp, { instances: 1, annotation: 'a' })),
    ],
    ['GET /apps/:guid/:version', () => request(down).get(`/apps/${lrp.guid}/${lrp.version}`)],
    ['PUT /apps/:guid/:version/stop', () => request(down).put(`/apps/${lrp.guid}/${lrp.version}/stop`)],
    [
      'GET /apps/:guid/:version/instances',
      () => request(down).get(`/apps/${lrp.guid}/${lrp.version}/instances`),
    ],
  ])('%s answers 503 with Retry-After', async (route, send) => {
    const res = await send();
    expect(res.status).toBe(503);
    expect(res.headers['retry-after']).toMatch(/^\d+$/);
    if (route.endsWith('/instances')) {
      // The instances client's shape: `error` a string, and no "not found" in it (CC must not read
      // "no instances" while the state is unknown).
      expect(res.body).toEqual({ instances: [], error: expect.stringContaining('unavailable') });
      expect((res.body as { error: string }).error).not.toContain('not found');
    } else expectErrorBody(res.body, 'unavailable');
  });

  // With Redis down, "no record" would be a wrong 404 (CC would tell the user the app does not exist).
  it('PUT /apps/:guid/:version/stop/:index answers 503 with Retry-After', async () => {
    const res = await request(down).put(`/apps/${lrp.guid}/${lrp.version}/stop/0`);
    expect(res.status).toBe(503);
    expect(res.headers['retry-after']).toMatch(/^\d+$/);
    expectErrorBody(res.body, 'unavailable');
  });

  it('still refuses bad input with 400 without touching Redis', async () => {
    const res = await request(down)
      .put(`/apps/${lrp.processGuid}`)
      .send(clientDesireBody(lrp, { disk_mb: 0 }));
    expect(res.status).toBe(400);
    expectErrorBody(res.body, 'disk_mb');
  });
});
