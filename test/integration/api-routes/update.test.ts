/**
 * POST /apps/:process_guid (update) against real Redis and BullMQ (no worker): instances, annotation and
 * image changed as CC asks, one converge per write, and 404 for an LRP unknown or stopped.
 */
import { describe, expect, it } from '@jest/globals';
import request from 'supertest';
import { newLrp, updateBody } from '@opi/contract/testing';
import { apiProbes, expectErrorBody, useApiApp } from '../../support/api-app.js';

const env = useApiApp();
const { desire, schedulingInfoOf, convergeJobs, fingerprint } = apiProbes(env);

describe('POST /apps/:process_guid (update)', () => {
  it('answers 200 and changes instances and annotation in GET /apps/:guid/:version and GET /apps', async () => {
    const lrp = newLrp();
    await desire(lrp, { instances: 1, last_updated: '1589212345.1' });
    const res = await request(env.app)
      .post(`/apps/${lrp.processGuid}`)
      .send(updateBody(lrp, { instances: 4, annotation: '1589212399.9876540', routes: { cf_router: [] } }));
    expect(res.status).toBe(200);
    expect(res.body).toEqual({});

    const get = await request(env.app).get(`/apps/${lrp.guid}/${lrp.version}`);
    expect(get.status).toBe(200);
    expect(get.body).toEqual({
      desired_lrp: {
        process_guid: lrp.processGuid,
        instances: 4,
        annotation: '1589212399.9876540',
        image: 'registry.example.com/team/app:1',
      },
    });
    expect((await schedulingInfoOf(lrp))?.annotation).toBe('1589212399.9876540');
    // One converge asked per write, each by its generation (the queue de-duplicates them per LRP: the
    // waiting job reads the latest record when it runs; queue/inbox-pump.test.ts).
    const asked = await convergeJobs(lrp);
    expect(asked.map((e) => e.fresh)).toEqual([true, false]);
    expect(asked[1]?.cause).toBe(`g${(await env.store.get(lrp.processGuid))?.generation}`);
  });

  it('leaves the image when the update has an empty or no image, and changes it otherwise', async () => {
    const lrp = newLrp();
    await desire(lrp);
    const image = async () =>
      (
        (await request(env.app).get(`/apps/${lrp.guid}/${lrp.version}`)).body as {
          desired_lrp: { image: string };
        }
      ).desired_lrp.image;

    let res = await request(env.app)
      .post(`/apps/${lrp.processGuid}`)
      .send(updateBody(lrp, { instances: 2, annotation: 'x1', image: '' }));
    expect(res.status).toBe(200);
    expect(await image()).toBe('registry.example.com/team/app:1');

    res = await request(env.app)
      .post(`/apps/${lrp.processGuid}`)
      .send(updateBody(lrp, { instances: 2, annotation: 'x2' }));
    expect(res.status).toBe(200);
    expect(await image()).toBe('registry.example.com/team/app:1');

    res = await request(env.app)
      .post(`/apps/${lrp.processGuid}`)
      .send(updateBody(lrp, { instances: 2, annotation: 'x2b', image: '   ' }));
    expect(res.status).toBe(200);
    expect(await image()).toBe('registry.example.com/team/app:1');

    res = await request(env.app)
      .post(`/apps/${lrp.processGuid}`)
      .send(updateBody(lrp, { instances: 2, annotation: 'x3', image: 'registry.example.com/team/app:2' }));
    expect(res.status).toBe(200);
    expect(await image()).toBe('registry.example.com/team/app:2');
  });

  it('answers 404 with an error body for an unknown LRP and records nothing', async () => {
    const lrp = newLrp();
    const before = await fingerprint(lrp);
    const res = await request(env.app)
      .post(`/apps/${lrp.processGuid}`)
      .send(updateBody(lrp, { instances: 1, annotation: 'a' }));
    expect(res.status).toBe(404);
    expectErrorBody(res.body, lrp.processGuid);
    expect(await fingerprint(lrp)).toEqual(before);
  });

  it('answers 404 for a stopped LRP', async () => {
    const lrp = newLrp();
    await desire(lrp);
    await request(env.app).put(`/apps/${lrp.guid}/${lrp.version}/stop`).expect(200);
    const res = await request(env.app)
      .post(`/apps/${lrp.processGuid}`)
      .send(updateBody(lrp, { instances: 1, annotation: 'a' }));
    expect(res.status).toBe(404);
    expectErrorBody(res.body, lrp.processGuid);
    expect(await schedulingInfoOf(lrp)).toBeUndefined();
  });
});
