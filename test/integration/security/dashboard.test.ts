/**
 * The queue dashboard on the API port: its own Basic credentials, every queue under the service's prefix,
 * retries (not from another site), secrets redacted from job data, and a read-only mode that refuses writes.
 */
import { describe, expect, it } from '@jest/globals';
import { Queue, Worker } from 'bullmq';
import { QUEUE_NAMES, workerConnection } from '@opi/queue';
import { eventually } from '../../support/eventually.js';
import {
  DASH,
  REDIS_URL,
  TOKENS,
  TOKENS_AND_DASHBOARD,
  basic,
  get,
  useSecureApis,
} from '../../support/secure-api.js';

const { redis, prefixes, api, failedJob } = useSecureApis();

describe('bearer tokens and the dashboard on the API port', () => {
  let base: string;
  let prefix: string;

  beforeAll(async () => {
    const a = await api(TOKENS_AND_DASHBOARD);
    base = `http://127.0.0.1:${a.port}`;
    prefix = prefixes.at(-1) ?? '';
  });

  it('asks for the dashboard credentials: none and wrong ones get 401 with WWW-Authenticate: Basic', async () => {
    const attempts: Record<string, string>[] = [
      {},
      { authorization: basic(DASH.user, 'wrong') },
      { authorization: basic('someone', DASH.password) },
      { authorization: basic(DASH.user, `${DASH.password}x`) },
      { authorization: `Bearer ${TOKENS[0]}` },
      { authorization: 'Basic !!!' },
    ];
    for (const headers of attempts) {
      for (const path of ['/admin/queues', '/admin/queues/api/queues']) {
        const res = await get(`${base}${path}`, headers);
        expect({ headers, path, status: res.status }).toEqual({ headers, path, status: 401 });
        expect(res.headers.get('www-authenticate')).toMatch(/^Basic realm="OPI queue dashboard"/);
        expect(res.text).not.toContain('<html');
      }
    }
  });

  it('shows every queue of the service, under its prefix, with the right credentials', async () => {
    const auth = { authorization: basic(DASH.user, DASH.password) };
    const page = await get(`${base}/admin/queues`, auth);
    expect(page.status).toBe(200);
    expect(page.headers.get('content-type')).toMatch(/text\/html/);
    expect(page.headers.get('cache-control')).toBe('no-store');
    const queues = await get(`${base}/admin/queues/api/queues`, auth);
    expect(queues.status).toBe(200);
    const body = JSON.parse(queues.text) as {
      queues: { name: string; displayName: string; readOnlyMode: boolean }[];
    };
    expect(body.queues.map((q) => q.name).sort()).toEqual(Object.values(QUEUE_NAMES).sort());
    for (const q of body.queues) {
      expect(q.displayName).toBe(`${prefix}:${q.name}`);
      expect(q.readOnlyMode).toBe(false);
    }
  });

  it('retries a failed job from the dashboard', async () => {
    const id = await failedJob(prefix, QUEUE_NAMES.callback, { taskGuid: 'retry-me' });
    const res = await get(
      `${base}/admin/queues/api/queues/${QUEUE_NAMES.callback}/${id}/retry`,
      { authorization: basic(DASH.user, DASH.password) },
      { method: 'PUT' },
    );
    expect(res.status).toBe(204);
    const q = new Queue(QUEUE_NAMES.callback, { connection: redis, prefix });
    expect(await q.getJobState(id)).toBe('waiting');
    await q.close();
  });

  it('refuses dashboard writes a browser sends from another site (CSRF)', async () => {
    const id = await failedJob(prefix, QUEUE_NAMES.callback, { taskGuid: 'csrf' });
    const res = await get(
      `${base}/admin/queues/api/queues/${QUEUE_NAMES.callback}/${id}/retry`,
      { authorization: basic(DASH.user, DASH.password), 'sec-fetch-site': 'cross-site' },
      { method: 'PUT' },
    );
    expect(res.status).toBe(403);
    const q = new Queue(QUEUE_NAMES.callback, { connection: redis, prefix });
    expect(await q.getJobState(id)).toBe('failed');
    await q.close();
  });

  it('never shows secrets from job data or return values in its answers', async () => {
    const secrets = ['S3CRET-one', 'S3CRET-two', 'S3CRET-three', 'S3CRET-four', 'S3CRET-five', 'S3CRET-six'];
    const data = {
      taskGuid: 'visible-guid',
      registry: { username: 'visible-user', password: secrets[0] },
      env: [{ name: 'X', apiToken: secrets[1] }],
      Authorization: `Bearer ${secrets[2]}`,
      nested: { deeper: { client_secret: secrets[3], credentials: { anything: secrets[4] } } },
    };
    const q = new Queue(QUEUE_NAMES.task, { connection: redis, prefix });
    // One job completes with secrets in its return value, then one waits with secrets in its data.
    const done = await q.add('test-returns', data);
    const connection = workerConnection(REDIS_URL);
    const w = new Worker(
      QUEUE_NAMES.task,
      () => Promise.resolve({ ok: true, registry_password: secrets[5] }),
      {
        connection,
        prefix,
      },
    );
    await eventually(async () => (await done.getState()) === 'completed', 'the job to complete');
    await w.close();
    connection.disconnect();
    const waiting = await q.add('test-secrets', data);

    const auth = { authorization: basic(DASH.user, DASH.password) };
    const answers = [
      await get(`${base}/admin/queues/api/queues?activeQueue=task&status=latest`, auth),
      await get(`${base}/admin/queues/api/queues?activeQueue=task&status=waiting`, auth),
      await get(`${base}/admin/queues/api/queues?activeQueue=task&status=completed`, auth),
      await get(`${base}/admin/queues/api/queues/task/${waiting.id}`, auth),
      await get(`${base}/admin/queues/api/queues/task/${done.id}`, auth),
    ];
    for (const a of answers) expect(a.status).toBe(200);
    const all = answers.map((a) => a.text).join('\n');
    expect(all).toContain('visible-guid');
    expect(all).toContain('visible-user');
    expect(all).toContain('[redacted]');
    for (const s of secrets) expect(all).not.toContain(s);
    await q.close();
  });
});

describe('read-only dashboard', () => {
  it('answers 405 to a retry and to any other write, and the job stays failed', async () => {
    const a = await api({
      OPI_DASHBOARD_USERNAME: DASH.user,
      OPI_DASHBOARD_PASSWORD: DASH.password,
      OPI_DASHBOARD_READ_ONLY: 'true',
    });
    const prefix = prefixes.at(-1) ?? '';
    const base = `http://127.0.0.1:${a.port}/admin/queues`;
    const auth = { authorization: basic(DASH.user, DASH.password), 'content-type': 'application/json' };
    const id = await failedJob(prefix, QUEUE_NAMES.lrp, { processGuid: 'read-only-1' });
    const writes: [string, string, unknown?][] = [
      ['PUT', `/api/queues/lrp/${id}/retry`],
      ['PUT', '/api/queues/lrp/retry/failed'],
      ['PUT', '/api/queues/lrp/clean/failed'],
      ['PUT', `/api/queues/lrp/${id}/clean`],
      ['PUT', '/api/queues/lrp/obliterate'],
      ['PUT', '/api/queues/lrp/pause'],
      ['POST', '/api/queues/lrp/add', { name: 'x', data: {} }],
    ];
    for (const [method, path, body] of writes) {
      const res = await get(`${base}${path}`, auth, {
        method,
        ...(body ? { body: JSON.stringify(body) } : {}),
      });
      expect({ method, path, status: res.status }).toEqual({ method, path, status: 405 });
    }
    const q = new Queue(QUEUE_NAMES.lrp, { connection: redis, prefix });
    expect(await q.getJobState(id)).toBe('failed');
    expect(await q.count()).toBe(0);
    await q.close();
    const queues = JSON.parse((await get(`${base}/api/queues`, auth)).text) as {
      queues: { readOnlyMode: boolean }[];
    };
    expect(queues.queues.every((q) => q.readOnlyMode)).toBe(true);
  });

  it('is not served at all without credentials configured', async () => {
    const a = await api({});
    expect((await get(`http://127.0.0.1:${a.port}/admin/queues`)).status).toBe(404);
  });
});
