/**
 * CallbackClient against a fake CC over http: how each kind of answer or failure is reported, keep-alive,
 * timeouts, CC going down and coming back, and URL credentials sent as Basic auth but never in an error.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from '@jest/globals';
import {
  CallbackClient,
  CallbackUnavailableError,
  CallbackUrlError,
  crashReportBody,
  crashReportUrl,
  stagingCompletedBody,
  taskCompletedBody,
} from '@opi/callbacks';
import { ccCrashReport } from '../../support/crash-report.js';
import { type FakeCc, startFakeCc } from '../../support/fake-cc.js';
import { TASK_PATH, guid, taskCompletion, taskUrl, thrown } from './calls.js';

/** A crash report CC takes. */
const crash = (pg: string) => crashReportBody(ccCrashReport(pg, { crashCount: 2 }));

const SECRET_USER = 'cc_internal_user';
const SECRET_PASSWORD = 's3cr3t-pa55';

/** Userinfo spliced into a base URL, percent-encoded as CC would put it there. */
function withCredentials(base: string): string {
  return base.replace('://', `://${SECRET_USER}:${encodeURIComponent(`${SECRET_PASSWORD}@x`)}@`);
}

/** Every way an error might reach a log: message, stack, String(), JSON, own properties. */
function everythingIn(e: Error): string {
  return [e.message, e.stack, String(e), JSON.stringify(e), JSON.stringify(Object.entries(e))].join('\n');
}

describe('CallbackClient over http', () => {
  let cc: FakeCc;
  let client: CallbackClient;

  beforeAll(async () => {
    cc = await startFakeCc();
    client = new CallbackClient({ timeoutMs: 2_000 });
  });
  afterAll(async () => {
    client.close();
    await cc.close();
  });
  beforeEach(async () => {
    await cc.up();
    cc.reset();
    cc.rejectRepeats = false;
  });

  it('delivers a task completion as JSON', async () => {
    const g = guid();
    const body = taskCompletedBody(g, { failed: true, failureReason: 'OOMKilled' });
    await expect(client.postJson(taskUrl(cc.url, g), body)).resolves.toStrictEqual({
      kind: 'delivered',
      status: 200,
    });
    expect(cc.calls).toHaveLength(1);
    expect(cc.calls[0]).toMatchObject({
      method: 'POST',
      path: `${TASK_PATH}/${g}/completed`,
      query: {},
      body: { task_guid: g, failed: true, failure_reason: 'OOMKilled' },
      clientCert: false,
      status: 200,
    });
    expect(cc.calls[0]!.headers['content-type']).toBe('application/json');
    expect(cc.calls[0]!.headers.authorization).toBeUndefined();
  });

  it('delivers a staging completion with its query, and a crash report', async () => {
    const staging = `${cc.url}/internal/v3/staging/s-${guid()}/build_completed?start=true`;
    const body = stagingCompletedBody({ failed: true, message: 'no buildpack' });
    await expect(client.postJson(staging, body)).resolves.toMatchObject({ kind: 'delivered' });
    const pg = `${randomUUID()}-${randomUUID()}`;
    await expect(client.postJson(crashReportUrl(`${cc.url}/`, pg), crash(pg))).resolves.toMatchObject({
      kind: 'delivered',
    });

    const [s] = cc.callsTo('/internal/v3/staging/');
    expect(s).toMatchObject({
      query: { start: 'true' },
      body: { error: { id: 'StagingError', message: 'no buildpack' } },
    });
    const [c] = cc.callsTo(`/internal/v4/apps/${pg}/crashed`);
    expect(c!.body).toStrictEqual({ ...crash(pg) });
  });

  it('reuses one keep-alive connection for consecutive callbacks', async () => {
    for (let i = 0; i < 3; i++) {
      await expect(client.postJson(...taskCompletion(cc.url))).resolves.toMatchObject({
        kind: 'delivered',
      });
    }
    expect(new Set(cc.calls.map((c) => c.remotePort)).size).toBe(1);
  });

  it.each([400, 404, 409, 422])('%i is rejected, not thrown', async (status) => {
    cc.answer(status, { body: { error_code: 'CF-Whatever', description: `answered ${status}` } });
    const result = await client.postJson(...taskCompletion(cc.url));
    expect(result).toStrictEqual({
      kind: 'rejected',
      status,
      body: JSON.stringify({ error_code: 'CF-Whatever', description: `answered ${status}` }),
    });
  });

  it('keeps only the first 500 characters of a rejection body', async () => {
    cc.answer(404, { body: 'x'.repeat(5_000) });
    const result = await client.postJson(...taskCompletion(cc.url));
    expect(result.kind === 'rejected' && result.body).toBe(`"${'x'.repeat(499)}`);
  });

  it('a repeated completion of the same task is rejected with 400, like CC', async () => {
    cc.rejectRepeats = true;
    const g = guid();
    const body = taskCompletedBody(g, { failed: false, failureReason: '' });
    await expect(client.postJson(taskUrl(cc.url, g), body)).resolves.toMatchObject({ kind: 'delivered' });
    await expect(client.postJson(taskUrl(cc.url, g), body)).resolves.toMatchObject({
      kind: 'rejected',
      status: 400,
    });
    // Another task is unaffected.
    const other = guid();
    await expect(
      client.postJson(taskUrl(cc.url, other), taskCompletedBody(other, { failed: false, failureReason: '' })),
    ).resolves.toMatchObject({ kind: 'delivered' });
  });

  it('a prefix answer overrides the global one', async () => {
    cc.answer(503);
    cc.answerFor('/internal/v4/apps/', 404);
    const pg = `${randomUUID()}-${randomUUID()}`;
    await expect(client.postJson(crashReportUrl(cc.url, pg), crash(pg))).resolves.toMatchObject({
      kind: 'rejected',
      status: 404,
    });
    await expect(client.postJson(...taskCompletion(cc.url))).rejects.toMatchObject({ status: 503 });
  });

  it.each([500, 502, 503, 504, 408])('%i is thrown as unavailable', async (status) => {
    cc.answer(status);
    const e = await thrown(client.postJson(...taskCompletion(cc.url)));
    expect(e).toBeInstanceOf(CallbackUnavailableError);
    expect(e).toMatchObject({ status, transient: true });
    expect((e as CallbackUnavailableError).retryAfterSeconds).toBeUndefined();
    expect(e.message).toContain(`CC answered ${status}`);
  });

  it.each<[string, string, number]>([
    ['in seconds', '7', 7],
    ['as an HTTP-date', new Date(Date.now() + 60_000).toUTCString(), 60],
  ])('429 with Retry-After %s is unavailable with retryAfterSeconds', async (_how, retryAfter, seconds) => {
    cc.answer(429, { headers: { 'retry-after': retryAfter } });
    const e = await thrown(client.postJson(...taskCompletion(cc.url)));
    expect(e).toBeInstanceOf(CallbackUnavailableError);
    expect((e as CallbackUnavailableError).status).toBe(429);
    const got = (e as CallbackUnavailableError).retryAfterSeconds!;
    expect(got).toBeGreaterThanOrEqual(seconds - 2);
    expect(got).toBeLessThanOrEqual(seconds);
  });

  it('CC down is unavailable; back up on the same URL, the same client delivers', async () => {
    const [url, body] = taskCompletion(cc.url);
    await expect(client.postJson(url, body)).resolves.toMatchObject({ kind: 'delivered' });
    await cc.down();
    const e = await thrown(client.postJson(url, body));
    expect(e).toBeInstanceOf(CallbackUnavailableError);
    expect(e).toMatchObject({ code: 'ECONNREFUSED' });
    await cc.up();
    await expect(client.postJson(url, body)).resolves.toStrictEqual({ kind: 'delivered', status: 200 });
    expect(cc.calls.map((c) => c.status)).toStrictEqual([200, 200]);
  });

  it('a slow CC times out as unavailable, within the client timeout', async () => {
    const quick = new CallbackClient({ timeoutMs: 300 });
    try {
      cc.delayMs = 5_000;
      const started = Date.now();
      const e = await thrown(quick.postJson(...taskCompletion(cc.url)));
      expect(Date.now() - started).toBeLessThan(2_000);
      expect(e).toBeInstanceOf(CallbackUnavailableError);
      expect(e).toMatchObject({ code: 'ETIMEDOUT' });
      expect(e.message).toContain('no answer within 300 ms');
      // CC got it but never answered: the queue's retry may deliver twice, which CC answers with 400.
      expect(cc.calls).toHaveLength(1);
    } finally {
      quick.close();
    }
  });

  it('an invalid or non-http URL is a permanent CallbackUrlError', async () => {
    await expect(client.postJson('not a url', {})).rejects.toBeInstanceOf(CallbackUrlError);
    await expect(client.postJson(`ftp://127.0.0.1${TASK_PATH}/x/completed`, {})).rejects.toBeInstanceOf(
      CallbackUrlError,
    );
    expect(cc.calls).toHaveLength(0);
  });

  describe('URL credentials', () => {
    it('are sent as Basic auth', async () => {
      await client.postJson(...taskCompletion(withCredentials(cc.url)));
      const expected = Buffer.from(`${SECRET_USER}:${SECRET_PASSWORD}@x`).toString('base64');
      expect(cc.calls[0]!.headers.authorization).toBe(`Basic ${expected}`);
    });

    const leaks: [string, (cc: FakeCc) => Promise<void>][] = [
      ['CC down', (f) => f.down()],
      [
        '503',
        async (f) => {
          f.answer(503);
        },
      ],
      [
        'timeout',
        async (f) => {
          f.delayMs = 5_000;
        },
      ],
    ];
    it.each(leaks)('never appear in an error (%s), nor does the body', async (_name, breakIt) => {
      await breakIt(cc);
      const g = guid();
      const quick = new CallbackClient({ timeoutMs: 300 });
      try {
        const e = await thrown(
          quick.postJson(taskUrl(withCredentials(cc.url), g), {
            ...taskCompletion(cc.url, g)[1],
            token: 'b0dy-secret',
          }),
        );
        expect(e).toBeInstanceOf(CallbackUnavailableError);
        const text = everythingIn(e);
        expect(text).toContain('127.0.0.1');
        for (const secret of [
          SECRET_USER,
          SECRET_PASSWORD,
          encodeURIComponent(SECRET_PASSWORD),
          'b0dy-secret',
        ]) {
          expect(text).not.toContain(secret);
        }
      } finally {
        quick.close();
      }
    });

    it.each([
      `ftp://${SECRET_USER}:${SECRET_PASSWORD}@127.0.0.1/x`,
      `http://${SECRET_USER}:${SECRET_PASSWORD}@[bad/x`,
      `http://${SECRET_USER}:${SECRET_PASSWORD}%E0%A4%A@127.0.0.1/x`,
    ])('never appear in a URL error: %s', async (url) => {
      const e = await thrown(client.postJson(url, {}));
      expect(e).toBeInstanceOf(CallbackUrlError);
      expect(everythingIn(e)).not.toContain(SECRET_PASSWORD);
      expect(everythingIn(e)).not.toContain(SECRET_USER);
    });
  });
});
