/** The request log: one line per request with the handler's facts, never a header, probes left out. */
import { describe, expect, it } from '@jest/globals';
import express from 'express';
import { pino } from 'pino';
import request from 'supertest';
import { logFacts, requestLog } from './request-log.js';

function app() {
  const lines: Record<string, unknown>[] = [];
  const ended: [string, number, string, number][] = [];
  const logger = pino(
    { level: 'info', base: null, redact: { paths: ['*.password'], censor: '[redacted]' } },
    {
      write: (s: string) => {
        lines.push(JSON.parse(s) as Record<string, unknown>);
      },
    },
  );
  const a = express();
  a.use(
    requestLog(logger, {
      ignore: (req) => req.url === '/healthz',
      level: (req, res) => (res.statusCode >= 500 ? 'error' : req.method === 'GET' ? 'debug' : 'info'),
      onEnd: (req, res, elapsedMs) =>
        ended.push([req.originalUrl, res.statusCode, String(req.route?.path), elapsedMs]),
    }),
  );
  a.put('/apps/:pg', (req, res) => {
    logFacts(res, { processGuid: req.params['pg'], did: 'lrp desired' });
    logFacts(res, { generation: 7, ...(req.query['leak'] ? { password: 'hunter2' } : {}) });
    res.status(202).end();
  });
  a.post('/fails', (req, res) => {
    req.log.error({ detail: { password: 'hunter2' } }, 'request failed');
    res.status(500).end();
  });
  a.get('/healthz', (_req, res) => res.status(200).end());
  a.get('/quiet', (_req, res) => res.status(200).end());
  return { a, lines, ended };
}

describe('requestLog', () => {
  it('logs one line with the request, the facts, the status and the time, and no header', async () => {
    const { a, lines } = app();
    const res = await request(a)
      .put('/apps/g-v')
      .set('Authorization', 'Bearer secret-token')
      .set('X-Request-Id', 'abc.1');
    expect(res.status).toBe(202);
    expect(res.headers['x-request-id']).toBe('abc.1');
    expect(lines).toEqual([
      {
        level: 30,
        time: expect.any(Number),
        req: { id: 'abc.1', method: 'PUT', url: '/apps/g-v', remoteAddress: expect.any(String) },
        processGuid: 'g-v',
        did: 'lrp desired',
        generation: 7,
        res: { statusCode: 202 },
        responseTime: expect.any(Number),
        msg: 'request completed',
      },
    ]);
    expect(JSON.stringify(lines)).not.toContain('secret-token');
  });

  it('censors a secret key among the facts', async () => {
    const { a, lines } = app();
    await request(a).put('/apps/g-v?leak=1');
    expect(lines[0]?.['password']).toBe('[redacted]');
  });

  it('makes up a request id when the client sends none or one that is not a plain token', async () => {
    const { a } = app();
    const none = await request(a).put('/apps/x');
    const bad = await request(a).put('/apps/x').set('X-Request-Id', 'a b\u00e9');
    for (const r of [none, bad]) expect(r.headers['x-request-id']).toMatch(/^[0-9a-f-]{36}$/);
  });

  it('gives a handler a logger bound to its request, and redacts what it logs', async () => {
    const { a, lines } = app();
    await request(a).post('/fails').set('X-Request-Id', 'r1');
    expect(lines.map((l) => [l['msg'], l['level'], (l['req'] as { id?: string }).id])).toEqual([
      ['request failed', 50, 'r1'],
      ['request completed', 50, 'r1'],
    ]);
    expect(lines[0]?.['detail']).toEqual({ password: '[redacted]' });
  });

  it('leaves out ignored requests and lines below the level', async () => {
    const { a, lines } = app();
    await request(a).get('/healthz');
    await request(a).get('/quiet');
    expect(lines).toEqual([]);
  });

  it('hands every ended request to onEnd once, logged or not, with its route and time', async () => {
    const { a, ended } = app();
    await request(a).get('/healthz');
    await request(a).put('/apps/g-v');
    await request(a).get('/nowhere');
    expect(ended).toEqual([
      ['/healthz', 200, '/healthz', expect.any(Number)],
      ['/apps/g-v', 202, '/apps/:pg', expect.any(Number)],
      ['/nowhere', 404, 'undefined', expect.any(Number)],
    ]);
    for (const [, , , ms] of ended) expect(ms).toBeGreaterThanOrEqual(0);
  });
});
