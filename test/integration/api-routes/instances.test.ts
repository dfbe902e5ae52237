/**
 * GET /apps/:guid/:version/instances against real Redis (no worker): the instances cache read back exact
 * (since in nanoseconds, missing indexes UNCLAIMED, the cache's age), and the 404 CC reads as "none".
 */
import { describe, expect, it } from '@jest/globals';
import request from 'supertest';
import { newLrp } from '@opi/contract/testing';
import { apiProbes, useApiApp } from '../../support/api-app.js';

const env = useApiApp();
const { desire, writeCache } = apiProbes(env);

describe('GET /apps/:guid/:version/instances', () => {
  it('answers 404 for an unknown LRP', async () => {
    const lrp = newLrp();
    const res = await request(env.app).get(`/apps/${lrp.guid}/${lrp.version}/instances`);
    expect(res.status).toBe(404);
    expect(res.body).toEqual({
      process_guid: lrp.processGuid,
      instances: [],
      error: expect.stringContaining(lrp.processGuid),
    });
    // CC's instances client takes a stopped process's answer as "no instances" only with these words.
    expect((res.body as { error: string }).error).toContain('not found');
  });

  it('lists every index as UNCLAIMED with since 0 before any sync', async () => {
    await env.redis.del(env.store.keys.cacheMeta, env.store.keys.instances);
    const lrp = newLrp();
    await desire(lrp, { instances: 3 });
    const res = await request(env.app).get(`/apps/${lrp.guid}/${lrp.version}/instances`);
    expect(res.status).toBe(200);
    expect(res.headers['content-type']).toMatch(/^application\/json/);
    expect(res.headers['x-opi-cache-age-ms']).toBe('never-synced');
    expect(res.text).toBe(
      `{"process_guid":"${lrp.processGuid}","instances":[` +
        '{"index":0,"since":0,"state":"UNCLAIMED"},' +
        '{"index":1,"since":0,"state":"UNCLAIMED"},' +
        '{"index":2,"since":0,"state":"UNCLAIMED"}]}',
    );
  });

  it('answers an empty list for zero instances', async () => {
    const lrp = newLrp();
    await desire(lrp, { instances: 0 });
    const res = await request(env.app).get(`/apps/${lrp.guid}/${lrp.version}/instances`);
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ process_guid: lrp.processGuid, instances: [] });
  });

  it('keeps since exact in nanoseconds and fills missing indexes from the desired instances', async () => {
    const lrp = newLrp();
    await desire(lrp, { instances: 4 });
    const syncedAt = Date.now() - 60_000;
    await writeCache(
      {
        [lrp.processGuid]: {
          instances: [
            { index: 2, podName: 'pod-c', sinceNs: '1589212347000000001', state: 'CRASHED' },
            { index: 0, podName: 'pod-a', sinceNs: '1589212345123456789', state: 'RUNNING' },
            {
              index: 1,
              podName: 'pod-b',
              sinceNs: '0',
              state: 'UNCLAIMED',
              placementError: 'Insufficient resources: memory',
            },
          ],
        },
      },
      syncedAt,
    );
    const res = await request(env.app).get(`/apps/${lrp.guid}/${lrp.version}/instances`);
    expect(res.status).toBe(200);
    expect(res.text).toBe(
      `{"process_guid":"${lrp.processGuid}","instances":[` +
        '{"index":0,"since":1589212345123456789,"state":"RUNNING"},' +
        '{"index":1,"since":0,"state":"UNCLAIMED","placement_error":"Insufficient resources: memory"},' +
        '{"index":2,"since":1589212347000000001,"state":"CRASHED"},' +
        '{"index":3,"since":0,"state":"UNCLAIMED"}]}',
    );
    const age = res.headers['x-opi-cache-age-ms'];
    expect(age).toMatch(/^\d+$/);
    expect(Number(age)).toBeGreaterThanOrEqual(60_000);
  });

  it('lists the cached instances of an LRP that was stopped but still has pods', async () => {
    const lrp = newLrp();
    await desire(lrp, { instances: 1 });
    await writeCache({
      [lrp.processGuid]: {
        instances: [{ index: 0, podName: 'pod-a', sinceNs: '1589212345000000000', state: 'RUNNING' }],
      },
    });
    await request(env.app).put(`/apps/${lrp.guid}/${lrp.version}/stop`).expect(200);
    const res = await request(env.app).get(`/apps/${lrp.guid}/${lrp.version}/instances`);
    expect(res.status).toBe(200);
    expect(res.text).toBe(
      `{"process_guid":"${lrp.processGuid}","instances":[{"index":0,"since":1589212345000000000,"state":"RUNNING"}]}`,
    );
  });
});
