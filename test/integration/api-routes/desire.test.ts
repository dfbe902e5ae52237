/**
 * PUT /apps/:process_guid against real Redis and BullMQ (no worker): the 202 and empty body, the record
 * written before the answer, one converge asked, re-desires and namespaces.
 */
import { describe, expect, it } from '@jest/globals';
import request from 'supertest';
import { clientDesireBody, newLrp } from '@opi/contract/testing';
import { apiProbes, useApiApp } from '../../support/api-app.js';

const env = useApiApp();
const { desire, schedulingInfoOf, convergeJobs, fingerprint } = apiProbes(env);

describe('PUT /apps/:process_guid (desire)', () => {
  it('answers 202 with an empty body, records the LRP and asks for one converge', async () => {
    const lrp = newLrp();
    const res = await request(env.app).put(`/apps/${lrp.processGuid}`).send(clientDesireBody(lrp));
    expect(res.status).toBe(202);
    expect(res.text).toBe('');

    const rec = await env.store.get(lrp.processGuid);
    expect(rec?.state).toBe('desired');
    if (rec?.state !== 'desired') return;
    expect(rec.lrp).toMatchObject({
      processGuid: lrp.processGuid,
      guid: lrp.guid,
      version: lrp.version,
      namespace: 'cf-workloads',
      instances: 2,
      annotation: '1589212345.123456',
      image: 'registry.example.com/team/app:1',
    });
    // Recorded before the answer: CC's next GET /apps must not see it missing.
    expect(await schedulingInfoOf(lrp)).toEqual({
      desired_lrp_key: { process_guid: lrp.processGuid },
      guid: lrp.guid,
      version: lrp.version,
      annotation: '1589212345.123456',
    });
    const jobs = await convergeJobs(lrp);
    expect(jobs).toHaveLength(1);
    expect(jobs[0]).toEqual({
      processGuid: lrp.processGuid,
      fresh: true,
      cause: expect.stringMatching(/^g\d+$/),
    });
  });

  it('answers 202 to a re-desire without changing the record or enqueueing again', async () => {
    const lrp = newLrp();
    await desire(lrp);
    const before = await fingerprint(lrp);
    for (const body of [
      clientDesireBody(lrp),
      clientDesireBody(lrp, { instances: 5, last_updated: 'other' }),
    ]) {
      const res = await request(env.app).put(`/apps/${lrp.processGuid}`).send(body);
      expect(res.status).toBe(202);
      expect(res.text).toBe('');
    }
    // The fingerprint counts the inbox: nothing more was asked.
    expect(await fingerprint(lrp)).toEqual(before);
    expect(await convergeJobs(lrp)).toHaveLength(1);
  });

  it('desires again after a stop', async () => {
    const lrp = newLrp();
    await desire(lrp);
    expect((await request(env.app).put(`/apps/${lrp.guid}/${lrp.version}/stop`)).status).toBe(200);
    expect(await schedulingInfoOf(lrp)).toBeUndefined();
    await desire(lrp, { last_updated: '2' });
    expect((await schedulingInfoOf(lrp))?.annotation).toBe('2');
    const res = await request(env.app).get(`/apps/${lrp.guid}/${lrp.version}`);
    expect(res.status).toBe(200);
  });

  it('uses the namespace of the request when given', async () => {
    const lrp = newLrp();
    await desire(lrp, { namespace: 'space-dev' });
    const rec = await env.store.get(lrp.processGuid);
    expect(rec?.state === 'desired' && rec.lrp.namespace).toBe('space-dev');
  });

  it('refuses a namespace that is not allowed with a 400, recording and enqueueing nothing', async () => {
    const lrp = newLrp();
    const res = await request(env.app)
      .put(`/apps/${lrp.processGuid}`)
      .send(clientDesireBody(lrp, { namespace: 'kube-system' }));
    expect(res.status).toBe(400);
    expect(res.body).toEqual({ error: { message: expect.stringContaining('namespace "kube-system"') } });
    expect(await env.store.get(lrp.processGuid)).toBeUndefined();
    expect(await convergeJobs(lrp)).toHaveLength(0);
  });
});
