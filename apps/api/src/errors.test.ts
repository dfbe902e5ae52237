/**
 * The error handler's answers to what the fuzz tests sent (test/fuzz): a body whose Content-Encoding
 * does not match its bytes and a path parameter that is not valid percent-encoding are the client's
 * errors (400 with the contract's error body), not a 500.
 */
import { describe, expect, it } from '@jest/globals';
import express from 'express';
import request from 'supertest';
import { createLogger } from '@opi/logging';
import { errorHandler } from './errors.js';

function app() {
  const a = express();
  a.use((req, _res, next) => {
    (req as unknown as { log: unknown }).log = createLogger({ level: 'silent', pretty: false });
    next();
  });
  a.use(express.json({ type: () => true, strict: false }));
  a.put('/apps/:process_guid', (_req, res) => {
    res.status(202).end();
  });
  a.use(errorHandler);
  return a;
}

describe('errorHandler', () => {
  it.each(['gzip', 'deflate', 'br'])(
    'answers 400 to a body that is not %s-encoded as it claims',
    async (enc) => {
      const res = await request(app())
        .put('/apps/x')
        .set('Content-Type', 'application/json')
        .set('Content-Encoding', enc)
        .send('{}');
      expect(res.status).toBe(400);
      expect(res.body).toEqual({ error: { message: expect.stringContaining('could not be decoded') } });
    },
  );

  it('answers 415 to an unknown Content-Encoding', async () => {
    const res = await request(app()).put('/apps/x').set('Content-Encoding', 'bogus').send('{}');
    expect(res.status).toBe(415);
    expect(res.body).toEqual({ error: { message: expect.any(String) } });
  });

  it('answers 400 to a path parameter that is not valid percent-encoding', async () => {
    for (const path of ['/apps/%', '/apps/%zz', '/apps/%E0%A4%A']) {
      const res = await request(app()).put(path).send({});
      expect(res.status).toBe(400);
      expect(res.body).toEqual({ error: { message: expect.stringContaining('percent-encoding') } });
    }
  });
});
