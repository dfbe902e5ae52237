/**
 * The error handler's answers: a body whose Content-Encoding does not match its bytes and a path
 * parameter that is not valid percent-encoding are the client's errors (400 with the contract's error
 * body), not a 500; a store that cannot reach Redis is a 503, told by its error's type alone.
 */
import { describe, expect, it } from '@jest/globals';
import express from 'express';
import request from 'supertest';
import { createLogger } from '@opi/logging';
import { StoreUnavailableError } from '@opi/state';
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
  a.get('/apps', () => {
    throw new StoreUnavailableError(new Error('Connection is closed.'));
  });
  a.get('/tasks', () => {
    // What ioredis says of a closed connection, not from a store: no message is read.
    throw new Error('Connection is closed.');
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

  it('answers 503 with Retry-After to StoreUnavailableError, and 500 to an untyped error of any message', async () => {
    const down = await request(app()).get('/apps');
    expect(down.status).toBe(503);
    expect(down.headers['retry-after']).toBe('5');
    expect(down.body).toEqual({ error: { message: 'the state store is unavailable, try again' } });
    const other = await request(app()).get('/tasks');
    expect(other.status).toBe(500);
  });
});
