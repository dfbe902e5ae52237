/** GET /apps/:guid/:version against real Redis (no worker): the desired LRP, 404 for an unknown one, 400 for a bad guid. */
import { randomUUID } from 'node:crypto';
import { describe, expect, it } from '@jest/globals';
import request from 'supertest';
import { newLrp } from '@opi/contract/testing';
import { apiProbes, expectErrorBody, useApiApp } from '../../support/api-app.js';

const env = useApiApp();
const { desire } = apiProbes(env);

describe('GET /apps/:guid/:version', () => {
  it('answers 200 with the desired LRP', async () => {
    const lrp = newLrp();
    await desire(lrp, { instances: 3, last_updated: 'ünïcødé 1.50' });
    const res = await request(env.app).get(`/apps/${lrp.guid}/${lrp.version}`);
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      desired_lrp: {
        process_guid: lrp.processGuid,
        instances: 3,
        annotation: 'ünïcødé 1.50',
        image: 'registry.example.com/team/app:1',
      },
    });
  });

  it('answers 404 with an error body for an unknown LRP', async () => {
    const lrp = newLrp();
    const res = await request(env.app).get(`/apps/${lrp.guid}/${lrp.version}`);
    expect(res.status).toBe(404);
    expectErrorBody(res.body, lrp.processGuid);
  });

  it('answers 400 naming the guid for an invalid guid in the path', async () => {
    const res = await request(env.app).get(`/apps/bad_/${randomUUID()}`);
    expect(res.status).toBe(400);
    expectErrorBody(res.body, 'guid');
  });
});
