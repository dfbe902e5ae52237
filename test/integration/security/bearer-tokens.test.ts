/**
 * Bearer tokens on CC's routes over real sockets against real Redis: 401 with WWW-Authenticate and the
 * contract's error body without a good one, nothing recorded, any configured token served, probes open.
 */
import { describe, expect, it } from '@jest/globals';
import { desireBody, uuid } from '@opi/contract/testing';
import { TOKENS, DASH, TOKENS_AND_DASHBOARD, basic, get, useSecureApis } from '../../support/secure-api.js';

const { redis, prefixes, api } = useSecureApis();

describe('bearer tokens and the dashboard on the API port', () => {
  let base: string;
  let prefix: string;

  beforeAll(async () => {
    const a = await api(TOKENS_AND_DASHBOARD);
    base = `http://127.0.0.1:${a.port}`;
    prefix = prefixes.at(-1) ?? '';
  });

  it('answers 401 with WWW-Authenticate: Bearer and the contract error body without a token', async () => {
    for (const [method, path] of [
      ['GET', '/apps'],
      ['GET', '/tasks'],
      ['PUT', `/apps/${uuid(1)}-${uuid(2)}`],
      ['GET', '/no/such/route'],
    ] as const) {
      const res = await get(`${base}${path}`, {}, { method });
      expect({ method, path, status: res.status }).toEqual({ method, path, status: 401 });
      expect(res.headers.get('www-authenticate')).toMatch(/^Bearer realm="opi"$/);
      // In the shape CC's client of the route reads: the task client a top-level message.
      expect(JSON.parse(res.text)).toEqual(
        path === '/tasks'
          ? { message: 'a bearer token is required' }
          : { error: { message: 'a bearer token is required' } },
      );
    }
  });

  it('answers 401 to a wrong token, another scheme, or the dashboard credentials', async () => {
    for (const authorization of [
      'Bearer wrong-token',
      `Bearer ${TOKENS[0]}x`,
      `Bearer ${(TOKENS[0] ?? '').slice(0, -1)}`,
      `Token ${TOKENS[0]}`,
      basic(DASH.user, DASH.password),
    ]) {
      const res = await get(`${base}/apps`, { authorization });
      expect({ authorization, status: res.status }).toEqual({ authorization, status: 401 });
      expect(res.headers.get('www-authenticate')).toMatch(/^Bearer realm="opi"/);
      expect(JSON.parse(res.text)).toEqual({ error: { message: expect.any(String) } });
    }
  });

  it('serves CC with any of the configured tokens', async () => {
    for (const token of TOKENS) {
      const res = await get(`${base}/apps`, { authorization: `Bearer ${token}` });
      expect(res.status).toBe(200);
      expect(JSON.parse(res.text)).toEqual({ desired_lrp_scheduling_infos: [] });
    }
  });

  it('records nothing from a write without a token', async () => {
    const guid = uuid(10, 'sec');
    const version = uuid(11, 'sec');
    const put = await get(
      `${base}/apps/${guid}-${version}`,
      { 'content-type': 'application/json' },
      { method: 'PUT', body: JSON.stringify(desireBody(guid, version)) },
    );
    expect(put.status).toBe(401);
    const list = await get(`${base}/apps`, { authorization: `Bearer ${TOKENS[1]}` });
    expect(list.text).not.toContain(guid);
    expect(await redis.keys(`${prefix}:*converge*`)).toEqual([]);
  });

  it('answers probes without a token', async () => {
    expect((await get(`${base}/healthz`)).status).toBe(200);
    expect((await get(`${base}/metrics`)).status).toBe(200);
  });
});
