/**
 * PUT /apps/:guid/:version/stop and /stop/:index against real Redis and BullMQ (no worker): the record
 * and converge of a stop, and the stop-instance job for the pod holding an index, or a 400 naming it.
 */
import { describe, expect, it } from '@jest/globals';
import request from 'supertest';
import { newLrp } from '@opi/contract/testing';
import { apiProbes, expectErrorBody, useApiApp } from '../../support/api-app.js';

const env = useApiApp();
const { desire, schedulingInfoOf, convergeJobs, fingerprint, writeCache } = apiProbes(env);

describe('PUT /apps/:guid/:version/stop', () => {
  it('answers 200, removes the LRP from GET /apps and asks for a converge', async () => {
    const lrp = newLrp();
    await desire(lrp);
    const res = await request(env.app).put(`/apps/${lrp.guid}/${lrp.version}/stop`);
    expect(res.status).toBe(200);
    expect(res.body).toEqual({});
    expect(await schedulingInfoOf(lrp)).toBeUndefined();
    expect((await request(env.app).get(`/apps/${lrp.guid}/${lrp.version}`)).status).toBe(404);
    const rec = await env.store.get(lrp.processGuid);
    expect(rec?.state).toBe('stopped');
    expect((await convergeJobs(lrp)).map((e) => e.cause)).toEqual([
      expect.stringMatching(/^g\d+$/),
      `g${rec?.generation}`,
    ]);
  });

  it('answers 200 also for an LRP it never saw', async () => {
    const lrp = newLrp();
    const res = await request(env.app).put(`/apps/${lrp.guid}/${lrp.version}/stop`);
    expect(res.status).toBe(200);
    expect(res.body).toEqual({});
    expect(await schedulingInfoOf(lrp)).toBeUndefined();
  });

  it('answers 200 to a repeated stop', async () => {
    const lrp = newLrp();
    await desire(lrp);
    for (let i = 0; i < 2; i++) {
      expect((await request(env.app).put(`/apps/${lrp.guid}/${lrp.version}/stop`)).status).toBe(200);
    }
    expect(await schedulingInfoOf(lrp)).toBeUndefined();
  });
});

describe('PUT /apps/:guid/:version/stop/:index', () => {
  it('answers 200 for an index below instances (nothing to restart without a pod)', async () => {
    const lrp = newLrp();
    await desire(lrp, { instances: 2 });
    const before = await fingerprint(lrp);
    for (const index of ['0', '1']) {
      const res = await request(env.app).put(`/apps/${lrp.guid}/${lrp.version}/stop/${index}`);
      expect(res.status).toBe(200);
      expect(res.body).toEqual({});
    }
    expect(await fingerprint(lrp)).toEqual(before);
  });

  it('enqueues a stop-instance job for the pod that holds the index', async () => {
    const lrp = newLrp();
    await desire(lrp, { instances: 2 });
    await writeCache({
      [lrp.processGuid]: {
        instances: [
          { index: 0, podName: 'pod-a', sinceNs: '1589212345000000000', state: 'RUNNING' },
          { index: 1, podName: 'pod-b', sinceNs: '1589212346000000000', state: 'RUNNING' },
        ],
      },
    });
    const res = await request(env.app).put(`/apps/${lrp.guid}/${lrp.version}/stop/1`);
    expect(res.status).toBe(200);
    const jobs = (await env.producer.queues.lrp.getJobs(['wait'])).filter(
      (j) =>
        j.name === 'stop-instance' && (j.data as { processGuid?: string }).processGuid === lrp.processGuid,
    );
    expect(jobs.map((j): unknown => j.data)).toEqual([
      { processGuid: lrp.processGuid, index: 1, podName: 'pod-b' },
    ]);
  });

  it.each(['2', '3', '99999'])('answers 400 for index %s ≥ instances (2)', async (index) => {
    const lrp = newLrp();
    await desire(lrp, { instances: 2 });
    const before = await fingerprint(lrp);
    const res = await request(env.app).put(`/apps/${lrp.guid}/${lrp.version}/stop/${index}`);
    expect(res.status).toBe(400);
    expectErrorBody(res.body, 'index');
    expect(await fingerprint(lrp)).toEqual(before);
  });

  it('answers 400 for any index of an LRP with zero instances', async () => {
    const lrp = newLrp();
    await desire(lrp, { instances: 0 });
    const res = await request(env.app).put(`/apps/${lrp.guid}/${lrp.version}/stop/0`);
    expect(res.status).toBe(400);
    expectErrorBody(res.body, 'index');
  });

  it.each(['abc', '-1', '1.5', '1e2', '0x1', '123456', '%20'])(
    'answers 400 naming the index for the index %j',
    async (index) => {
      const lrp = newLrp();
      await desire(lrp, { instances: 2 });
      const before = await fingerprint(lrp);
      const res = await request(env.app).put(`/apps/${lrp.guid}/${lrp.version}/stop/${index}`);
      expect(res.status).toBe(400);
      expectErrorBody(res.body, 'index');
      expect(await fingerprint(lrp)).toEqual(before);
    },
  );

  it('answers 404 for an unknown LRP', async () => {
    const lrp = newLrp();
    const res = await request(env.app).put(`/apps/${lrp.guid}/${lrp.version}/stop/0`);
    expect(res.status).toBe(404);
    expectErrorBody(res.body, lrp.processGuid);
  });
});
