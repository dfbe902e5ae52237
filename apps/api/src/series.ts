/**
 * Middleware run one after another inside one Express layer. Express's router pays a match, a path
 * trim and a try/catch for each layer on every request; the front of CC's routes (request log, operator
 * gate, credentials, rate limit) matches every path, so it runs as one layer. What a handler passes to
 * `next`, throws, or rejects with goes to Express's error handling as it would from its own layer.
 */
import type { NextFunction, Request, RequestHandler, Response } from 'express';

export function series(...handlers: RequestHandler[]): RequestHandler {
  return (req: Request, res: Response, next: NextFunction): void => {
    let i = 0;
    const step = (err?: unknown): void => {
      if (err !== undefined && err !== null) {
        next(err);
        return;
      }
      const handler = handlers[i++];
      if (!handler) {
        next();
        return;
      }
      try {
        const r: unknown = handler(req, res, step);
        if (r instanceof Promise) r.catch(next);
      } catch (e) {
        next(e);
      }
    };
    step();
  };
}
