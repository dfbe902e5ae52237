/**
 * Who may reach the API, over real sockets against real Redis: bearer tokens on CC's routes (and not on
 * the probes), the dashboard's own Basic credentials and read-only mode, mutual TLS with certificates
 * made by openssl (another CA's, an expired one), the refusal to listen openly without authentication,
 * and registry passwords and tokens kept out of the dashboard's answers, BullMQ's job records, the logs,
 * error bodies, metrics, callbacks to CC and the Deployment (its annotations and spec): only the pull
 * Secret, owned by the Deployment, holds them. The Role's least privilege is deploy-artifacts.test.ts'.
 */
import { deletePrefix } from '../support/redis-keys.js';
import { execFile, execFileSync } from 'node:child_process';
import { randomBytes, randomUUID } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { request as httpsRequest } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { createServer as createHttpServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { V1Deployment, V1Secret } from '@kubernetes/client-node';
import { Queue, Worker } from 'bullmq';
import { Redis } from 'ioredis';
import { pino } from 'pino';
import { type Settings, parseSettings } from '@opi/config';
import { loadKubeConfig } from '@opi/kube';
import { FAST_BEHAVIOUR, startSimulator } from '@opi/kube-sim';
import { REDACT_PATHS, createLogger, type Logger } from '@opi/logging';
import { QUEUE_NAMES, workerConnection } from '@opi/queue';
import { InsecureListenError, type RunningApi, startApi } from '../../apps/api/src/index.js';
import { type RunningWorker, startWorker } from '../../apps/worker/src/index.js';
import { eventually } from '../support/eventually.js';
import { NAMESPACE, desireBody, uuid } from './harness.js';

const REDIS_URL = 'redis://127.0.0.1:6379';
const TOKENS = ['tok-alpha-0123456789', 'tok-beta-0123456789'];
const DASH = { user: 'ops', password: 'dash-Pa55-word' };
const silent = createLogger({ level: 'silent', pretty: false });

const prefixes: string[] = [];
const running: RunningApi[] = [];
const redis = new Redis(REDIS_URL);

function settingsFor(env: Record<string, string>): Settings {
  const prefix = `it-sec-${randomUUID().slice(0, 8)}`;
  prefixes.push(prefix);
  return parseSettings({ PORT: '0', REDIS_URL, OPI_QUEUE_PREFIX: prefix, ...env });
}

async function api(env: Record<string, string>, logger: Logger = silent): Promise<RunningApi> {
  const a = await startApi(settingsFor(env), logger);
  running.push(a);
  return a;
}

function basic(user: string, password: string): string {
  return `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}`;
}

async function get(
  url: string,
  headers: Record<string, string> = {},
  init: RequestInit = {},
): Promise<{ status: number; text: string; headers: Headers }> {
  const res = await fetch(url, { ...init, headers });
  return { status: res.status, text: await res.text(), headers: res.headers };
}

afterAll(async () => {
  for (const a of running) await a.close();
  for (const prefix of prefixes) {
    await deletePrefix(redis, prefix);
  }
  redis.disconnect();
});

/** A job in `queue` that has failed once: a throw-away worker fails it, as a real failure would. */
async function failedJob(prefix: string, queue: string, data: Record<string, unknown>): Promise<string> {
  const q = new Queue(queue, { connection: redis, prefix });
  const job = await q.add('test-failing', data, { attempts: 1 });
  const connection = workerConnection(REDIS_URL);
  const w = new Worker(
    queue,
    () => {
      throw new Error('refused by the test');
    },
    { connection, prefix },
  );
  await eventually(async () => (await job.getState()) === 'failed', 'the job to fail');
  await w.close();
  connection.disconnect();
  await q.close();
  return job.id ?? '';
}

// ---------------------------------------------------------------------------------------------------

describe('bearer tokens and the dashboard on the API port', () => {
  let base: string;
  let prefix: string;

  beforeAll(async () => {
    const a = await api({
      OPI_API_TOKENS: TOKENS.join(','),
      OPI_DASHBOARD_USERNAME: DASH.user,
      OPI_DASHBOARD_PASSWORD: DASH.password,
    });
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

// ---------------------------------------------------------------------------------------------------

interface Pki {
  dir: string;
  ca: Buffer;
  file(name: string): string;
  read(name: string): Buffer;
}

/** A CA, a server certificate for 127.0.0.1, a client certificate of that CA and one of another CA. */
function makePki(): Pki {
  const dir = mkdtempSync(join(tmpdir(), 'opi-mtls-'));
  const file = (n: string): string => join(dir, n);
  const ssl = (...args: string[]): void => {
    execFileSync('openssl', args, { cwd: dir, stdio: 'pipe' });
  };
  const ec = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'];
  writeFileSync(
    file('server.ext'),
    'subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth\n',
  );
  writeFileSync(file('client.ext'), 'extendedKeyUsage=clientAuth\n');
  for (const ca of ['ca', 'other-ca']) {
    ssl(
      'req',
      '-x509',
      ...ec,
      '-keyout',
      `${ca}.key`,
      '-out',
      `${ca}.crt`,
      '-subj',
      `/CN=${ca}`,
      '-days',
      '2',
    );
  }
  const sign = (name: string, ca: string, ext: string, days = '2'): void => {
    ssl('req', ...ec, '-keyout', `${name}.key`, '-out', `${name}.csr`, '-subj', `/CN=${name}`);
    ssl(
      'x509',
      '-req',
      '-in',
      `${name}.csr`,
      '-CA',
      `${ca}.crt`,
      '-CAkey',
      `${ca}.key`,
      '-CAcreateserial',
      '-out',
      `${name}.crt`,
      '-days',
      days,
      '-extfile',
      ext,
    );
  };
  sign('server', 'ca', 'server.ext');
  sign('cloud-controller', 'ca', 'client.ext');
  sign('cloud-controller-2', 'ca', 'client.ext');
  sign('intruder', 'other-ca', 'client.ext');
  // Signed by the right CA, but its notAfter is a day before its notBefore: expired from the start.
  sign('expired', 'ca', 'client.ext', '-1');
  const read = (n: string): Buffer => readFileSync(file(n));
  return { dir, ca: read('ca.crt'), file, read };
}

function httpsGet(
  port: number,
  path: string,
  tls: { ca: Buffer; cert?: Buffer; key?: Buffer },
  send: { method?: string; body?: string; headers?: Record<string, string> } = {},
): Promise<{ status: number; text: string }> {
  return new Promise((resolve, reject) => {
    const req = httpsRequest(
      {
        host: '127.0.0.1',
        port,
        path,
        method: send.method ?? 'GET',
        headers: send.headers ?? {},
        agent: false,
        ...tls,
      },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => (text += c));
        res.on('end', () => {
          resolve({ status: res.statusCode ?? 0, text });
        });
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.end(send.body);
  });
}

describe('mutual TLS', () => {
  let pki: Pki;
  let port: number;
  let adminPort: number;

  beforeAll(async () => {
    pki = makePki();
    const a = await api({
      OPI_TLS_CERT_FILE: pki.file('server.crt'),
      OPI_TLS_KEY_FILE: pki.file('server.key'),
      OPI_TLS_CLIENT_CA_FILE: pki.file('ca.crt'),
      OPI_ADMIN_PORT: '0',
      OPI_DASHBOARD_USERNAME: DASH.user,
      OPI_DASHBOARD_PASSWORD: DASH.password,
    });
    port = a.port;
    adminPort = a.admin?.port ?? 0;
  });

  afterAll(() => {
    rmSync(pki.dir, { recursive: true, force: true });
  });

  it("serves a client presenting a certificate of the client CA, as CC's OPI client does", async () => {
    const res = await httpsGet(port, '/apps', {
      ca: pki.ca,
      cert: pki.read('cloud-controller.crt'),
      key: pki.read('cloud-controller.key'),
    });
    expect(res).toEqual({ status: 200, text: '{"desired_lrp_scheduling_infos":[]}' });
  });

  it('takes a desire, a task and reads from a client with a certificate and no token, as CC sends them', async () => {
    const cc = { ca: pki.ca, cert: pki.read('cloud-controller.crt'), key: pki.read('cloud-controller.key') };
    // Ruby's HTTPClient sends its string bodies as a form; the API reads any body as JSON.
    const as = (method: string, body?: unknown) => ({
      method,
      ...(body === undefined
        ? {}
        : { body: JSON.stringify(body), headers: { 'content-type': 'application/x-www-form-urlencoded' } }),
    });
    const guid = randomUUID();
    const version = randomUUID();
    const desire = desireBody(guid, version, {
      health_check_http_endpoint: null,
      lifecycle: {
        docker_lifecycle: { command: [], image: 'nginx', registry_username: null, registry_password: null },
      },
    });
    expect((await httpsGet(port, `/apps/${guid}-${version}`, cc, as('PUT', desire))).status).toBe(202);
    const infos = JSON.parse((await httpsGet(port, '/apps', cc)).text) as {
      desired_lrp_scheduling_infos: { desired_lrp_key: { process_guid: string } }[];
    };
    expect(infos.desired_lrp_scheduling_infos.map((i) => i.desired_lrp_key.process_guid)).toContain(
      `${guid}-${version}`,
    );
    const task = randomUUID();
    const refused = await httpsGet(
      port,
      `/tasks/${task}`,
      cc,
      as('POST', { name: 't', completion_callback: 'not a url', lifecycle: {} }),
    );
    expect(refused.status).toBe(400);
    expect(JSON.parse(refused.text)).toEqual({ message: expect.stringContaining('completion_callback') });
  });

  it('fails the handshake of a client without a certificate', async () => {
    await expect(httpsGet(port, '/apps', { ca: pki.ca })).rejects.toThrow(
      /certificate required|ECONNRESET|socket hang up|handshake/i,
    );
  });

  it('fails the handshake of a client whose certificate another CA signed', async () => {
    await expect(
      httpsGet(port, '/apps', { ca: pki.ca, cert: pki.read('intruder.crt'), key: pki.read('intruder.key') }),
    ).rejects.toThrow(/unknown ca|certificate|ECONNRESET|socket hang up/i);
  });

  it('fails the handshake of a client whose certificate of the right CA has expired', async () => {
    await expect(
      httpsGet(port, '/apps', { ca: pki.ca, cert: pki.read('expired.crt'), key: pki.read('expired.key') }),
    ).rejects.toThrow(/expired|certificate|ECONNRESET|socket hang up/i);
  });

  it('rate-limits each client certificate on its own', async () => {
    const limited = await api({
      OPI_TLS_CERT_FILE: pki.file('server.crt'),
      OPI_TLS_KEY_FILE: pki.file('server.key'),
      OPI_TLS_CLIENT_CA_FILE: pki.file('ca.crt'),
      OPI_RATE_LIMIT_PER_MINUTE: '2',
    });
    const as = (name: string) => ({
      ca: pki.ca,
      cert: pki.read(`${name}.crt`),
      key: pki.read(`${name}.key`),
    });
    const statuses = [];
    for (let i = 0; i < 3; i++)
      statuses.push((await httpsGet(limited.port, '/apps', as('cloud-controller'))).status);
    expect(statuses).toEqual([200, 200, 429]);
    // Another certificate is another client, though it connects from the same address.
    expect((await httpsGet(limited.port, '/apps', as('cloud-controller-2'))).status).toBe(200);
  });

  it('does not answer plain http on the API port', async () => {
    await expect(fetch(`http://127.0.0.1:${port}/apps`)).rejects.toThrow();
  });

  it('serves probes, metrics and the dashboard on the admin port, without a client certificate', async () => {
    const admin = `http://127.0.0.1:${adminPort}`;
    expect((await get(`${admin}/healthz`)).status).toBe(200);
    expect((await get(`${admin}/metrics`)).status).toBe(200);
    expect((await get(`${admin}/admin/queues`)).status).toBe(401);
    expect(
      (await get(`${admin}/admin/queues`, { authorization: basic(DASH.user, DASH.password) })).status,
    ).toBe(200);
    // CC's routes are not there, and the operator endpoints are not on the API port.
    expect((await get(`${admin}/apps`)).status).toBe(404);
    const cc = { ca: pki.ca, cert: pki.read('cloud-controller.crt'), key: pki.read('cloud-controller.key') };
    expect((await httpsGet(port, '/healthz', cc)).status).toBe(404);
    expect((await httpsGet(port, '/admin/queues', cc)).status).toBe(404);
  });
});

// ---------------------------------------------------------------------------------------------------

describe('listening without authentication', () => {
  it('refuses to start on 0.0.0.0 without tokens, mutual TLS or OPI_ALLOW_INSECURE', async () => {
    const settings = settingsFor({ HOST: '0.0.0.0' });
    await expect(startApi(settings, silent)).rejects.toThrow(InsecureListenError);
    await expect(startApi(settings, silent)).rejects.toThrow(
      /refusing to listen on 0\.0\.0\.0 without authentication.*OPI_API_TOKENS.*OPI_ALLOW_INSECURE=true/s,
    );
  });

  it('starts on 0.0.0.0 with OPI_ALLOW_INSECURE, or with tokens, and on loopback without either', async () => {
    const envs: Record<string, string>[] = [
      { HOST: '0.0.0.0', OPI_ALLOW_INSECURE: 'true' },
      { HOST: '0.0.0.0', OPI_API_TOKENS: TOKENS[0] ?? '' },
      { HOST: '127.0.0.1' },
      { HOST: '::1' },
    ];
    for (const env of envs) {
      const a = await api(env);
      expect(a.port).toBeGreaterThan(0);
    }
  });

  it('makes `npm run start:api` exit 1 with the message, before it touches Redis', async () => {
    const main = join(process.cwd(), 'apps/api/dist/main.js');
    const result = await new Promise<{ code: number | null; out: string }>((resolve) => {
      execFile(
        process.execPath,
        [main],
        {
          env: {
            PATH: process.env['PATH'] ?? '',
            HOST: '0.0.0.0',
            PORT: '0',
            // Nothing listens there: reaching Redis first would hang, not exit.
            REDIS_URL: 'redis://127.0.0.1:1',
          },
          timeout: 20_000,
        },
        (err, stdout, stderr) => {
          resolve({ code: err ? ((err as { code?: number }).code ?? null) : 0, out: `${stdout}${stderr}` });
        },
      );
    });
    expect(result.code).toBe(1);
    expect(result.out).toContain('refusing to listen on 0.0.0.0 without authentication');
  });

  it('refuses half-configured TLS and dashboard settings', () => {
    expect(() => parseSettings({ OPI_TLS_CERT_FILE: '/x.crt' })).toThrow(/OPI_TLS_KEY_FILE/);
    expect(() => parseSettings({ OPI_TLS_CLIENT_CA_FILE: '/ca.crt' })).toThrow(/OPI_TLS_CERT_FILE/);
    expect(() => parseSettings({ OPI_DASHBOARD_USERNAME: 'ops' })).toThrow(/OPI_DASHBOARD_PASSWORD/);
    expect(() => parseSettings({ OPI_API_TOKENS: 'a, b' })).toThrow(/OPI_API_TOKENS/);
  });
});

// ---------------------------------------------------------------------------------------------------

describe('registry passwords', () => {
  // Random letters and digits: any 8 of them in a row appearing anywhere is a leak, even a partial one
  // (V8's JSON errors quote about ten characters around the mistake).
  const PASSWORD = randomBytes(18).toString('base64url');
  const fragments = Array.from({ length: PASSWORD.length - 7 }, (_, i) => PASSWORD.slice(i, i + 8));
  const leaks = (text: string): string[] => fragments.filter((f) => text.includes(f));
  const lines: string[] = [];
  let base: string;
  let worker: RunningWorker;
  let closeSim: () => Promise<void>;
  let apps: {
    list(): Promise<string[]>;
    secrets(): Promise<string[]>;
    deployments(): Promise<V1Deployment[]>;
    secretObjects(): Promise<V1Secret[]>;
  };
  let prefix: string;

  beforeAll(async () => {
    // The service's logger configuration (redaction included), writing into `lines` at every level.
    const logger = pino(
      { level: 'trace', redact: { paths: REDACT_PATHS, censor: '[redacted]' } },
      { write: (line: string) => lines.push(line) },
    );
    const sim = await startSimulator({ behaviour: FAST_BEHAVIOUR, namespaces: [NAMESPACE], seed: 3 });
    closeSim = () => sim.close();
    const settings = settingsFor({
      OPI_API_TOKENS: TOKENS[0] ?? '',
      OPI_NAMESPACE: NAMESPACE,
      OPI_RESYNC_INTERVAL_MS: '500',
      OPI_METRICS_PORT: '0',
      OPI_DASHBOARD_USERNAME: DASH.user,
      OPI_DASHBOARD_PASSWORD: DASH.password,
      // Reports to a callback that refuses are retried: quickly here.
      OPI_CALLBACK_BACKOFF_MS: '50',
    });
    prefix = settings.queuePrefix;
    worker = await startWorker(settings, logger, loadKubeConfig({ kubeconfigYaml: sim.kubeconfig() }));
    const a = await startApi(settings, logger);
    running.push(a);
    base = `http://127.0.0.1:${a.port}`;
    const { KubeConfig, AppsV1Api, CoreV1Api } = await import('@kubernetes/client-node');
    const kc = new KubeConfig();
    kc.loadFromString(sim.kubeconfig());
    const appsApi = kc.makeApiClient(AppsV1Api);
    const core = kc.makeApiClient(CoreV1Api);
    apps = {
      list: async () =>
        (await appsApi.listNamespacedDeployment({ namespace: NAMESPACE })).items.map(
          (d) => d.metadata?.name ?? '',
        ),
      secrets: async () =>
        (await core.listNamespacedSecret({ namespace: NAMESPACE })).items.map((s) =>
          Buffer.from(s.data?.['.dockerconfigjson'] ?? '', 'base64').toString(),
        ),
      deployments: async () => (await appsApi.listNamespacedDeployment({ namespace: NAMESPACE })).items,
      secretObjects: async () => (await core.listNamespacedSecret({ namespace: NAMESPACE })).items,
    };
  });

  afterAll(async () => {
    await worker.close();
    await closeSim();
  });

  const send = (method: string, path: string, body: string): Promise<{ status: number; text: string }> =>
    get(
      `${base}${path}`,
      { authorization: `Bearer ${TOKENS[0]}`, 'content-type': 'application/json' },
      { method, body },
    );

  function docker(image = 'registry.example.com/team/app:1'): Record<string, unknown> {
    return {
      docker_lifecycle: { image, command: [], registry_username: 'robot', registry_password: PASSWORD },
    };
  }

  it('reach the cluster as a pull Secret, and appear neither in error bodies nor in any log line', async () => {
    const guid = uuid(1, 'reg');
    const version = uuid(2, 'reg');
    const pg = `${guid}-${version}`;
    const ok = await send(
      'PUT',
      `/apps/${pg}`,
      JSON.stringify(desireBody(guid, version, { lifecycle: docker() })),
    );
    expect(ok.status).toBe(202);
    // The password went where it belongs: the Deployment's pull Secret.
    await eventually(
      async () => (await apps.secrets()).some((s) => s.includes(PASSWORD)),
      'the pull Secret',
      30_000,
    );
    // The Secret is created first, then the Deployment that owns it.
    await eventually(async () => (await apps.list()).length === 1, 'the Deployment', 30_000);

    const refused: { status: number; text: string }[] = [
      // A field the contract refuses, next to the password.
      await send(
        'PUT',
        `/apps/${pg}`,
        JSON.stringify(desireBody(guid, version, { disk_mb: 0, lifecycle: docker() })),
      ),
      // The password itself of the wrong type.
      await send(
        'PUT',
        `/apps/${pg}`,
        JSON.stringify(
          desireBody(guid, version, {
            lifecycle: { docker_lifecycle: { image: 'a/b:1', registry_password: { value: PASSWORD } } },
          }),
        ),
      ),
      // A path that does not match the body.
      await send(
        'PUT',
        `/apps/${uuid(3, 'reg')}-${version}`,
        JSON.stringify(desireBody(guid, version, { lifecycle: docker() })),
      ),
      // Malformed JSON around the password.
      await send(
        'PUT',
        `/apps/${pg}`,
        `{"lifecycle": {"docker_lifecycle": {"registry_password": "${PASSWORD}" oops`,
      ),
      // The password unquoted and single-quoted: V8's parse error quotes the text around the mistake.
      await send(
        'PUT',
        `/apps/${pg}`,
        `{"lifecycle": {"docker_lifecycle": {"registry_password": ${PASSWORD}}}}`,
      ),
      await send(
        'PUT',
        `/apps/${pg}`,
        `{"lifecycle": {"docker_lifecycle": {"registry_password": '${PASSWORD}'}}}`,
      ),
      // A body over the limit.
      await send(
        'PUT',
        `/apps/${pg}`,
        JSON.stringify(
          desireBody(guid, version, { lifecycle: docker(), environment: { BIG: 'x'.repeat(1_100_000) } }),
        ),
      ),
      // A task with the password and a callback that is not a URL.
      await send(
        'POST',
        `/tasks/${uuid(4, 'reg')}`,
        JSON.stringify({
          guid: uuid(4, 'reg'),
          name: 'migrate',
          app_guid: guid,
          app_name: 'app',
          org_name: 'org',
          org_guid: 'org-1',
          space_name: 'dev',
          space_guid: 'space-1',
          environment: [],
          completion_callback: 'not a url',
          lifecycle: docker(),
          memory_mb: 64,
          disk_mb: 64,
          cpu_weight: 1,
        }),
      ),
    ];
    for (const r of refused) {
      expect(r.status).toBeGreaterThanOrEqual(400);
      expect(r.status).toBeLessThan(500);
      // Either of the shapes CC's clients read: apps `error.message`, tasks a top-level `message`.
      expect([{ error: { message: expect.any(String) } }, { message: expect.any(String) }]).toContainEqual(
        JSON.parse(r.text),
      );
      expect(leaks(r.text)).toEqual([]);
    }
    // The logs saw all of it (requests, the converge) at trace level, and neither the password nor the token.
    const log = lines.join('');
    expect(log).toContain(pg);
    expect(log).toContain('"statusCode":400');
    // Request lines carry id, method, url and peer: no header, so no authorization header, is ever logged.
    expect(log).not.toMatch(/authorization|"headers"/i);
    expect(leaks(log)).toEqual([]);
    expect(log).not.toContain(TOKENS[0]);
  });

  /** Every job of every queue, as BullMQ keeps it: data, return value, failure reason, stack traces. */
  async function allJobsText(): Promise<string> {
    const parts: string[] = [];
    for (const name of Object.values(QUEUE_NAMES)) {
      const q = new Queue(name, { connection: redis, prefix });
      for (const job of await q.getJobs()) {
        parts.push(
          JSON.stringify({
            data: job.data as unknown,
            returnvalue: job.returnvalue as unknown,
            failedReason: job.failedReason,
            stacktrace: job.stacktrace,
          }),
        );
      }
      await q.close();
    }
    return parts.join('\n');
  }

  /** What the dashboard shows of every queue (the lists and each job's page). */
  async function dashboardText(): Promise<string> {
    const auth = { authorization: basic(DASH.user, DASH.password) };
    const out: string[] = [];
    for (const name of Object.values(QUEUE_NAMES)) {
      for (const status of ['latest', 'waiting', 'active', 'completed', 'failed', 'delayed']) {
        const res = await get(`${base}/admin/queues/api/queues?activeQueue=${name}&status=${status}`, auth);
        expect(res.status).toBe(200);
        out.push(res.text);
      }
      const q = new Queue(name, { connection: redis, prefix });
      for (const job of await q.getJobs()) {
        const res = await get(`${base}/admin/queues/api/queues/${name}/${job.id}`, auth);
        expect(res.status).toBe(200);
        out.push(res.text);
      }
      await q.close();
    }
    return out.join('\n');
  }

  it('stay out of the Deployment (annotations, spec) and of every job: the pull Secret, owned by the Deployment, has them', async () => {
    const guid = uuid(5, 'reg');
    const version = uuid(6, 'reg');
    const pg = `${guid}-${version}`;
    const ok = await send(
      'PUT',
      `/apps/${pg}`,
      JSON.stringify(desireBody(guid, version, { lifecycle: docker() })),
    );
    expect(ok.status).toBe(202);
    const deployment = await eventually(
      async () =>
        (await apps.deployments()).find(
          (d) => d.metadata?.annotations?.['cloudfoundry.org/process_guid'] === pg,
        ),
      'the Deployment',
      30_000,
    );
    const annotations = deployment.metadata?.annotations ?? {};
    // The desired LRP is there, so the state can be rebuilt, but not its credentials.
    expect(Object.keys(annotations).length).toBeGreaterThan(0);
    expect(leaks(JSON.stringify(annotations))).toEqual([]);
    expect(JSON.stringify(annotations)).not.toMatch(/registry_password|"password"/);
    expect(leaks(JSON.stringify(deployment))).toEqual([]);
    // The pod pulls with a Secret of type dockerconfigjson that the Deployment owns (deleted with it).
    const pullSecrets = deployment.spec?.template.spec?.imagePullSecrets ?? [];
    expect(pullSecrets).toHaveLength(1);
    const secret = (await apps.secretObjects()).find((x) => x.metadata?.name === pullSecrets[0]?.name);
    expect(secret?.type).toBe('kubernetes.io/dockerconfigjson');
    expect(Buffer.from(secret?.data?.['.dockerconfigjson'] ?? '', 'base64').toString()).toContain(PASSWORD);
    expect(secret?.metadata?.ownerReferences).toEqual([
      expect.objectContaining({
        kind: 'Deployment',
        name: deployment.metadata?.name,
        uid: deployment.metadata?.uid,
      }),
    ]);
    expect(leaks(JSON.stringify(secret?.metadata ?? {}))).toEqual([]);
    // Jobs carry identities only: neither BullMQ's records nor the dashboard show the password.
    expect(leaks(await allJobsText())).toEqual([]);
    const shown = await dashboardText();
    expect(shown).toContain(pg);
    expect(leaks(shown)).toEqual([]);
    // Nor do the metrics, which take no credentials.
    const metrics = await get(`${base}/metrics`);
    expect(leaks(metrics.text)).toEqual([]);
    expect(metrics.text).not.toContain(TOKENS[0]);
  });

  it('staging with registry credentials: used against the registry, absent from logs, jobs, the dashboard, callbacks and error bodies', async () => {
    // A registry that asks for Basic credentials and refuses them, and CC's staging callback.
    const authorizations: string[] = [];
    const callbacks: string[] = [];
    const server = createHttpServer((req, res) => {
      let body = '';
      req.on('data', (c: Buffer) => (body += c.toString()));
      req.on('end', () => {
        if (req.url?.startsWith('/v2/')) {
          authorizations.push(req.headers.authorization ?? '');
          res.writeHead(401, {
            'www-authenticate': 'Basic realm="test registry"',
            'content-type': 'application/json',
          });
          res.end(JSON.stringify({ errors: [{ code: 'UNAUTHORIZED', message: 'authentication required' }] }));
          return;
        }
        callbacks.push(body);
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end('{}');
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const port = (server.address() as AddressInfo).port;
    try {
      const stagingGuid = `staging-${randomUUID().slice(0, 8)}`;
      const staging = (extra: Record<string, unknown> = {}): string =>
        JSON.stringify({
          app_guid: 'app-1',
          completion_callback: `http://127.0.0.1:${port}/staging/${stagingGuid}`,
          lifecycle: docker(`127.0.0.1:${port}/team/app:1`),
          ...extra,
        });
      expect((await send('POST', `/stage/${stagingGuid}`, staging())).status).toBe(202);
      await eventually(async () => Promise.resolve(callbacks.length > 0), 'the staging callback', 30_000);
      // The credentials went to the registry (as Basic), and the failure CC heard does not repeat them.
      expect(authorizations).toContain(`Basic ${Buffer.from(`robot:${PASSWORD}`).toString('base64')}`);
      const reported = JSON.parse(callbacks[0] ?? '{}') as { error?: { id: string; message: string } };
      expect(reported.error).toEqual({ id: 'StagingError', message: expect.stringMatching(/denied/) });
      expect(leaks(callbacks.join('\n'))).toEqual([]);

      const refused = [
        await send('POST', `/stage/${stagingGuid}-2`, staging({ completion_callback: 'not a url' })),
        await send('POST', `/stage/${stagingGuid}-3`, staging({ memory_mb: 'lots' })),
        await send('POST', `/stage/other-guid`, staging({ staging_guid: stagingGuid })),
        await send(
          'POST',
          `/stage/${stagingGuid}-4`,
          `{"lifecycle": {"docker_lifecycle": {"registry_password": ${PASSWORD}}}}`,
        ),
      ];
      for (const r of refused) {
        expect(r.status).toBe(400);
        expect(JSON.parse(r.text)).toEqual({ message: expect.any(String) });
        expect(leaks(r.text)).toEqual([]);
      }
      expect(leaks(await allJobsText())).toEqual([]);
      const shown = await dashboardText();
      expect(shown).toContain(stagingGuid);
      expect(leaks(shown)).toEqual([]);
      const log = lines.join('');
      expect(log).toContain(stagingGuid);
      expect(leaks(log)).toEqual([]);
    } finally {
      await new Promise<void>((resolve) =>
        server.close(() => {
          resolve();
        }),
      );
    }
  });
});
