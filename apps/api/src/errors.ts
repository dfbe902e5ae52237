/**
 * One error handler for the API: domain errors (among them the stores' StoreUnavailableError) and
 * body-parser failures become a 4xx/503 in the error shape the route's CC client reads (errorBodyFor);
 * anything else is a 500 whose details stay in the log.
 */
import type { ErrorRequestHandler, Request, Response } from 'express';
import { errorBodyFor } from '@opi/contract';
import { NotFoundError, UnavailableError, ValidationError } from '@opi/domain';

interface BodyParserError {
  type?: string;
  status?: number;
  limit?: number;
  /** http-errors' mark of an error whose message may go to the client (e.g. a failed decompression). */
  expose?: boolean;
}

/** An error answer in the shape CC's client for this route reads. */
export function sendError(req: Request, res: Response, status: number, message: string): void {
  res.status(status).json(errorBodyFor(req.path, message));
}

// Express recognises an error handler by its four parameters, so `_next` stays.
export const errorHandler: ErrorRequestHandler = (err: unknown, req, res, _next) => {
  const bp = err as BodyParserError;
  if (bp.type === 'entity.too.large') {
    sendError(req, res, 413, `request body is larger than ${bp.limit ?? 'the limit of'} bytes`);
    return;
  }
  if (bp.type === 'entity.parse.failed') {
    // Not V8's message itself: it quotes a piece of the body (`..."assword": hunter2"...`), maybe a secret.
    const where = /at position \d+/.exec((err as Error).message)?.[0];
    sendError(req, res, 400, `request body is not valid JSON${where ? ` (${where})` : ''}`);
    return;
  }
  if (bp.type && typeof bp.status === 'number' && bp.status >= 400 && bp.status < 500) {
    sendError(req, res, bp.status, (err as Error).message);
    return;
  }
  // The router's: a path parameter that is not valid percent-encoding (`%`, `%zz`).
  if (err instanceof URIError && bp.status === 400) {
    sendError(req, res, 400, 'the path is not valid percent-encoding');
    return;
  }
  // The body parser's, without a type: a body whose bytes are not in its Content-Encoding (zlib's errors).
  if (bp.expose === true && bp.status === 400) {
    sendError(req, res, 400, `request body could not be decoded: ${(err as Error).message}`);
    return;
  }
  if (err instanceof ValidationError) {
    sendError(req, res, err.status, err.message);
    return;
  }
  if (err instanceof NotFoundError) {
    sendError(req, res, 404, err.message);
    return;
  }
  // Also StoreUnavailableError, a store's "Redis cannot be reached right now".
  if (err instanceof UnavailableError) {
    res.setHeader('Retry-After', String(err.retryAfterSeconds));
    sendError(req, res, 503, err.message);
    return;
  }
  req.log.error({ err }, 'request failed');
  sendError(req, res, 500, 'internal error');
};
