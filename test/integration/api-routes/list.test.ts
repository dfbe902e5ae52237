/**
 * GET /apps against real Redis (no worker): the scheduling infos CC compares, with each annotation echoed
 * byte for byte, kept current through desires, updates, stops and a Redis that lost its keys.
 */
import { describe, expect, it } from '@jest/globals';
import request from 'supertest';
import { JobProducer } from '@opi/queue';
import { type Lrp, newLrp, updateBody } from '@opi/contract/testing';
import { appOn, apiProbes, useApiApp } from '../../support/api-app.js';

const env = useApiApp();
const { desire, schedulingInfos, schedulingInfoOf } = apiProbes(env);

describe('GET /apps', () => {
  it('always has the array, also when there is no LRP', async () => {
    const prefix = `${env.prefix}-empty`;
    const producer = new JobProducer({ connection: env.redis, prefix, attempts: 1 });
    env.producers.push(producer);
    const app = appOn(env.redis, prefix, producer);
    const res = await request(app).get('/apps');
    expect(res.status).toBe(200);
    expect(res.headers['content-type']).toMatch(/^application\/json/);
    expect(res.text).toBe('{"desired_lrp_scheduling_infos":[]}');
  });

  it.each([
    '1589212345.123456',
    '1589212345.1234560',
    '1589212345',
    '1e3',
    '',
    ' spaced  out ',
    'ünïcødé ✓ 🚀 日本',
    'quote " backslash \\ slash / tab \t',
    '\u2028\u2029',
  ])('echoes the annotation %j byte for byte', async (annotation) => {
    const lrp = newLrp();
    await desire(lrp, { last_updated: annotation });
    const res = await request(env.app).get('/apps');
    expect(res.status).toBe(200);
    const entry = JSON.stringify({
      desired_lrp_key: { process_guid: lrp.processGuid },
      guid: lrp.guid,
      version: lrp.version,
      annotation,
    });
    // The raw bytes, not only the parsed value: CC compares the strings.
    expect(res.text).toContain(entry);
    const info = (await schedulingInfoOf(lrp))!;
    expect(info.annotation).toBe(annotation);
    expect(Buffer.from(info.annotation, 'utf8').equals(Buffer.from(annotation, 'utf8'))).toBe(true);
  });

  it('answers the current infos after every kind of change, also from the body it keeps', async () => {
    const a = newLrp();
    const b = newLrp();
    const has = async (lrp: Lrp) => (await schedulingInfoOf(lrp))?.annotation;
    await desire(a, { last_updated: 'a1' });
    expect(await has(a)).toBe('a1');
    expect(await has(a)).toBe('a1'); // the kept body
    await desire(b, { last_updated: 'b1' });
    expect([await has(a), await has(b)]).toEqual(['a1', 'b1']);
    await request(env.app)
      .post(`/apps/${a.processGuid}`)
      .send(updateBody(a, { instances: 2, annotation: 'a2' }))
      .expect(200);
    expect(await has(a)).toBe('a2');
    // A stop keeps the entry until the sync sees the workload gone; the sync then drops it.
    await request(env.app).put(`/apps/${b.guid}/${b.version}/stop`).expect(200);
    await env.store.listStoppedWhilePresent(new Map(), [b.processGuid]);
    expect(await has(b)).toBeUndefined();
    // Redis lost everything (the version too): the answer is built again, not the kept one.
    const found = await env.redis.keys(`${env.store.keys.schedulingInfos}*`);
    await env.redis.del(...found, env.store.keys.lrp(a.processGuid));
    expect(await has(a)).toBeUndefined();
    await desire(a, { last_updated: 'a3' });
    expect(await has(a)).toBe('a3');
  });

  it('lists every desired LRP, old versions included', async () => {
    const v1 = newLrp();
    const v2 = { ...newLrp(), guid: v1.guid };
    v2.processGuid = `${v2.guid}-${v2.version}`;
    await desire(v1, { last_updated: 'a' });
    await desire(v2, { last_updated: 'b' });
    const infos = await schedulingInfos();
    const mine = infos
      .filter((s) => s.guid === v1.guid)
      .sort((a, b) => a.annotation.localeCompare(b.annotation));
    expect(mine).toEqual([
      {
        desired_lrp_key: { process_guid: v1.processGuid },
        guid: v1.guid,
        version: v1.version,
        annotation: 'a',
      },
      {
        desired_lrp_key: { process_guid: v2.processGuid },
        guid: v2.guid,
        version: v2.version,
        annotation: 'b',
      },
    ]);
  });
});
