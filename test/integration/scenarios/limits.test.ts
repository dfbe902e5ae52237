/**
 * The API's limits through the whole service (real Redis under its own prefix, the simulated cluster):
 * the body size (413), the rate per client (429 with Retry-After, keyed by token or address, probes
 * exempt), queue-depth back-pressure (503 with Retry-After, nothing recorded, reads untouched, writes
 * taken again once the workers drain the queue), and the workers' Kubernetes request time-out setting.
 * No assertion depends on timing: whatever is cached is polled for.
 */
import { afterEach, describe, expect, it } from '@jest/globals';
import { Queue } from 'bullmq';
import { QUEUE_NAMES } from '@opi/queue';
import { desireBody, taskBody, uuid } from '@opi/contract/testing';
import { type Service, call, eventually, schedulingInfos, startService } from '../../support/service.js';

/** Where task completions go in these tests: nothing listens there. */
const NO_CC = 'http://127.0.0.1:1';
const TOKENS = ['limits-token-one-0123456789', 'limits-token-two-0123456789'];

let service: Service | undefined;

afterEach(async () => {
  await service?.close();
  service = undefined;
});

async function send(
  base: string,
  method: string,
  path: string,
  options: { token?: string; body?: unknown } = {},
): Promise<{ status: number; text: string; headers: Headers }> {
  const res = await fetch(`${base}${path}`, {
    method,
    headers: {
      ...(options.token ? { authorization: `Bearer ${options.token}` } : {}),
      ...(options.body === undefined ? {} : { 'content-type': 'application/json' }),
    },
    ...(options.body === undefined ? {} : { body: JSON.stringify(options.body) }),
  });
  return { status: res.status, text: await res.text(), headers: res.headers };
}

function expectErrorBody(text: string, pattern: RegExp): void {
  const body = JSON.parse(text) as { error: { message: string } };
  expect(body).toEqual({ error: { message: expect.any(String) } });
  expect(body.error.message).toMatch(pattern);
}

async function metric(s: Service, name: string): Promise<string> {
  return (await s.api.metrics.expose()).body
    .split('\n')
    .filter((l) => l.startsWith(name))
    .join('\n');
}

describe('body size', () => {
  it('answers 413 with the error body to a body over OPI_BODY_LIMIT_BYTES, and records nothing', async () => {
    service = await startService({ workers: 0, env: { OPI_BODY_LIMIT_BYTES: '4096' } });
    const guid = uuid(1, 'body');
    const version = uuid(2, 'body');
    const big = desireBody(guid, version, { environment: { BIG: 'x'.repeat(5000) } });
    const res = await call(service.base, 'PUT', `/apps/${guid}-${version}`, big);
    expect(res.status).toBe(413);
    expectErrorBody(res.text, /larger than 4096 bytes/);
    expect((await call(service.base, 'GET', `/apps/${guid}/${version}`)).status).toBe(404);
    const ok = await call(service.base, 'PUT', `/apps/${guid}-${version}`, desireBody(guid, version));
    expect(ok.status).toBe(202);
  });
});

describe('rate per client', () => {
  it('answers 429 with Retry-After past the limit, per token, and never limits probes', async () => {
    service = await startService({
      workers: 0,
      env: { OPI_RATE_LIMIT_PER_MINUTE: '5', OPI_API_TOKENS: TOKENS.join(',') },
    });
    const { base } = service;
    for (let i = 0; i < 5; i++)
      expect((await send(base, 'GET', '/apps', { token: TOKENS[0] })).status).toBe(200);
    const limited = await send(base, 'GET', '/apps', { token: TOKENS[0] });
    expect(limited.status).toBe(429);
    expect(Number(limited.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    expect(Number(limited.headers.get('retry-after'))).toBeLessThanOrEqual(60);
    expectErrorBody(limited.text, /too many requests/);
    expect(limited.text).not.toContain(TOKENS[0]);

    // A write over the limit records nothing.
    const guid = uuid(3, 'rate');
    const version = uuid(4, 'rate');
    const put = await send(base, 'PUT', `/apps/${guid}-${version}`, {
      token: TOKENS[0],
      body: desireBody(guid, version),
    });
    expect(put.status).toBe(429);

    // The other token is another client, with its own allowance.
    const other = await send(base, 'GET', `/apps/${guid}/${version}`, { token: TOKENS[1] });
    expect(other.status).toBe(404);
    // Requests refused for their credentials do not use anyone's allowance, nor are they limited.
    for (let i = 0; i < 8; i++) expect((await send(base, 'GET', '/apps')).status).toBe(401);
    // Probes and scrapes are never limited.
    for (let i = 0; i < 10; i++) {
      expect((await send(base, 'GET', '/healthz')).status).toBe(200);
      expect((await send(base, 'GET', '/metrics')).status).toBe(200);
    }
    expect(await metric(service, 'opi_rate_limited_total')).toMatch(/^opi_rate_limited_total [1-9]/m);
  });

  it('keys clients without credentials by address, and 0 turns the limit off', async () => {
    service = await startService({ workers: 0, env: { OPI_RATE_LIMIT_PER_MINUTE: '3' } });
    for (let i = 0; i < 3; i++) expect((await call(service.base, 'GET', '/tasks')).status).toBe(200);
    expect((await call(service.base, 'GET', '/tasks')).status).toBe(429);
    await service.close();

    service = await startService({ workers: 0, env: { OPI_RATE_LIMIT_PER_MINUTE: '0' } });
    for (let i = 0; i < 50; i++) expect((await call(service.base, 'GET', '/tasks')).status).toBe(200);
  });
});

describe('queue-depth back-pressure', () => {
  it('refuses writes to a full queue with 503 and Retry-After, records nothing, and takes them again once drained', async () => {
    service = await startService({ workers: 0, env: { OPI_MAX_QUEUE_DEPTH: '3' } });
    const s = service;
    // Without workers every desire leaves a converge job waiting; the API reads the depth at most once
    // a second, so desire until it notices.
    let n = 0;
    const refused = await eventually(async () => {
      n++;
      const res = await call(
        s.base,
        'PUT',
        `/apps/${uuid(n, 'bp')}-${uuid(n, 'bpv')}`,
        desireBody(uuid(n, 'bp'), uuid(n, 'bpv')),
      );
      if (res.status === 202) return false;
      return { ...res, guid: uuid(n, 'bp'), version: uuid(n, 'bpv') };
    }, 'a desire refused for back-pressure');
    expect(n).toBeGreaterThan(3);
    expect(refused.status).toBe(503);
    expectErrorBody(refused.text, /lrp queue is full/);
    const res = await fetch(`${s.base}/apps/${refused.guid}-${refused.version}`, {
      method: 'PUT',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(desireBody(refused.guid, refused.version)),
    });
    expect(res.status).toBe(503);
    expect(res.headers.get('retry-after')).toBe('10');

    // Nothing of the refused desire was recorded.
    expect((await call(s.base, 'GET', `/apps/${refused.guid}/${refused.version}`)).status).toBe(404);
    const infos = await schedulingInfos(s.base);
    expect(infos.has(`${refused.guid}-${refused.version}`)).toBe(false);
    expect(infos.size).toBe(n - 1);

    // Updates and stops of an accepted LRP are refused too, and change nothing.
    const first = { guid: uuid(1, 'bp'), version: uuid(1, 'bpv') };
    const pg = `${first.guid}-${first.version}`;
    const update = await call(s.base, 'POST', `/apps/${pg}`, {
      guid: first.guid,
      version: first.version,
      update: { instances: 5, annotation: 'changed' },
    });
    expect(update.status).toBe(503);
    expect((await call(s.base, 'PUT', `/apps/${first.guid}/${first.version}/stop`)).status).toBe(503);
    expect((await call(s.base, 'PUT', `/apps/${first.guid}/${first.version}/stop/0`)).status).toBe(503);
    const still = JSON.parse((await call(s.base, 'GET', `/apps/${first.guid}/${first.version}`)).text) as {
      desired_lrp: { instances: number; annotation: string };
    };
    expect(still.desired_lrp).toMatchObject({ instances: 1, annotation: '1589212345.000001' });

    // Reads are never refused; the task queue is another queue, not full.
    expect((await call(s.base, 'GET', '/apps')).status).toBe(200);
    expect((await call(s.base, 'GET', '/tasks')).status).toBe(200);
    expect((await call(s.base, 'GET', `/apps/${first.guid}/${first.version}/instances`)).status).not.toBe(
      503,
    );
    expect(
      (await call(s.base, 'POST', `/tasks/${uuid(1, 'bpt')}`, taskBody(NO_CC, uuid(1, 'bpt')))).status,
    ).toBe(202);
    expect(await metric(s, 'opi_backpressure_rejections_total')).toMatch(
      /^opi_backpressure_rejections_total\{queue="lrp"\} [1-9]/m,
    );

    // A worker drains the queue: writes are taken again.
    await s.addWorker();
    const late = { guid: uuid(999, 'bp'), version: uuid(999, 'bpv') };
    await eventually(
      async () =>
        (await call(s.base, 'PUT', `/apps/${late.guid}-${late.version}`, desireBody(late.guid, late.version)))
          .status === 202,
      'a desire accepted after the queue drained',
    );
  });

  it('refuses tasks, cancels and staging while the task queue is full', async () => {
    service = await startService({ workers: 0, env: { OPI_MAX_QUEUE_DEPTH: '2' } });
    const s = service;
    // Two jobs waiting in the task queue, as a backlog of tasks would leave them.
    const q = new Queue(QUEUE_NAMES.task, { connection: s.redis, prefix: s.settings.queuePrefix });
    await q.add('filler', {});
    await q.add('filler', {});
    await q.close();
    let n = 0;
    const refused = await eventually(async () => {
      n++;
      const guid = uuid(n, 'bpt');
      const res = await call(s.base, 'POST', `/tasks/${guid}`, taskBody(NO_CC, guid));
      return res.status === 202 ? false : { ...res, guid };
    }, 'a task refused for back-pressure');
    expect(refused.status).toBe(503);
    // In the shape CC's task client reads: a top-level message.
    expect(JSON.parse(refused.text)).toEqual({ message: expect.stringMatching(/task queue is full/) });
    expect((await call(s.base, 'GET', `/tasks/${refused.guid}`)).status).toBe(404);
    expect(JSON.parse((await call(s.base, 'GET', '/tasks')).text)).not.toContainEqual({ guid: refused.guid });
    const staging = await call(s.base, 'POST', `/stage/${uuid(1, 'bps')}`, {
      app_guid: 'app-1',
      lifecycle: { docker_lifecycle: { image: 'busybox:1' } },
      completion_callback: 'http://127.0.0.1:1/staging',
    });
    expect(staging.status).toBe(503);
    expect(JSON.parse(staging.text)).toEqual({ message: expect.stringMatching(/task queue is full/) });
    expect((await call(s.base, 'DELETE', `/tasks/${uuid(1, 'bpt')}`)).status).toBe(503);
    // The lrp queue is empty: desires go on.
    const guid = uuid(1, 'bpl');
    expect((await call(s.base, 'PUT', `/apps/${guid}-${guid}`, desireBody(guid, guid))).status).toBe(202);
  });
});

describe("the workers' Kubernetes client", () => {
  it('gives up on a request after OPI_KUBE_TIMEOUT_MS', async () => {
    service = await startService({
      workers: 1,
      workerMetrics: true,
      env: { OPI_KUBE_TIMEOUT_MS: '300', OPI_KUBE_MAX_CONCURRENT_REQUESTS: '4' },
    });
    const s = service;
    const port = s.workers[0]?.metricsPort;
    // Slower than the setting, faster than the readiness check's own bound (2 s): the adapter's
    // time-out is what the check reports.
    s.sim.faults.set({ latencyMs: 1200 });
    const report = await eventually(async () => {
      const res = await fetch(`http://127.0.0.1:${port}/readyz`);
      const body = (await res.json()) as { checks: { kubernetes: { ok: boolean; message: string } } };
      return res.status === 503 && body.checks.kubernetes;
    }, 'the worker not ready');
    expect(report).toEqual({ ok: false, message: 'no answer within 300 ms' });
    s.sim.faults.reset();
  });
});
