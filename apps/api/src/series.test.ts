import { describe, expect, it } from '@jest/globals';
import express, { type RequestHandler } from 'express';
import request from 'supertest';
import { series } from './series.js';

function app(...handlers: RequestHandler[]) {
  const a = express();
  a.use(series(...handlers));
  a.get('/x', (_req, res) => {
    res.status(200).json({ order: res.locals['order'] as unknown });
  });
  a.use(((err: Error, _req, res, _next) => {
    res.status(599).json({ error: err.message, order: res.locals['order'] as unknown });
  }) as express.ErrorRequestHandler);
  return a;
}

const mark =
  (name: string): RequestHandler =>
  (_req, res, next) => {
    res.locals['order'] = [...((res.locals['order'] as string[] | undefined) ?? []), name];
    next();
  };

describe('series', () => {
  it('runs each handler in order, then the routes', async () => {
    const res = await request(app(mark('a'), mark('b'), mark('c'))).get('/x');
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ order: ['a', 'b', 'c'] });
  });

  it('stops where a handler answers', async () => {
    const answer: RequestHandler = (_req, res) => {
      res.status(429).json({ order: res.locals['order'] as unknown });
    };
    const res = await request(app(mark('a'), answer, mark('c'))).get('/x');
    expect(res.status).toBe(429);
    expect(res.body).toEqual({ order: ['a'] });
  });

  it.each([
    [
      'passed to next',
      ((_req, _res, next) => {
        next(new Error('boom'));
      }) as RequestHandler,
    ],
    [
      'thrown',
      (() => {
        throw new Error('boom');
      }) as RequestHandler,
    ],
    ['rejected', (() => Promise.reject(new Error('boom'))) as RequestHandler],
    [
      'thrown after an async next',
      ((_req, _res, next) => {
        setImmediate(next);
      }) as RequestHandler,
    ],
  ])('hands an error %s to the error handler, skipping the rest', async (how, failing) => {
    const after: RequestHandler =
      how === 'thrown after an async next'
        ? () => {
            throw new Error('boom');
          }
        : mark('c');
    const res = await request(app(mark('a'), failing, after)).get('/x');
    expect(res.status).toBe(599);
    expect(res.body).toEqual({ error: 'boom', order: ['a'] });
  });
});
