/**
 * One log line per request. A handler's facts (process guid, generation, what it did) ride on that line
 * rather than on a line of their own: half the log volume and CPU at thousands of desires a second, and
 * one line to grep per request. The request itself is logged as id, method, url and peer only: headers
 * are where credentials travel, and are never logged.
 *
 * This middleware stands in for pino-http, whose line it keeps (`req`, the facts, `res`, `responseTime`,
 * "request completed"). pino-http built two child loggers when a request arrived and a third when it
 * ended, each serialising the request again; at the desire ingest's rate that was a fifth of the API's
 * CPU (bench, `--cpu-prof`). Here `req.log` is made only when a handler logs on its own, which most
 * requests never do, and the line is one plain call.
 *
 * The line is made of fixed request fields and flat facts only (the types say so), so it is redacted by
 * key at its top level; the logger's nested wildcard paths found nothing there and cost as much as the
 * rest of the line. A handler's own lines (`req.log`) keep the full redaction.
 */
import { randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { RequestHandler } from 'express';
import { type Logger, TOP_LEVEL_SECRET_KEYS } from '@opi/logging';

declare module 'node:http' {
  interface IncomingMessage {
    /** X-Request-Id: the client's, when it is a plain token, else a new one. */
    id: string;
    /** A logger whose lines carry this request. */
    log: Logger;
  }
}

/** What a handler may add to its request's line: flat values, so that no object can carry a secret in. */
export type LogFacts = Record<string, string | number | boolean | undefined>;

interface WithFacts {
  locals?: { logFacts?: LogFacts };
}

/** Adds facts to this request's log line (later facts win). */
export function logFacts(res: ServerResponse, facts: LogFacts): void {
  const r = res as ServerResponse & WithFacts;
  r.locals ??= {};
  r.locals.logFacts = { ...r.locals.logFacts, ...facts };
}

function factsOf(res: ServerResponse): LogFacts | undefined {
  return (res as ServerResponse & WithFacts).locals?.logFacts;
}

/** What the log keeps of a request. */
function requestFields(req: IncomingMessage): Record<string, unknown> {
  return { id: req.id, method: req.method, url: req.url, remoteAddress: req.socket.remoteAddress };
}

type Level = 'error' | 'warn' | 'info' | 'debug';

export interface RequestLogOptions {
  /** Requests not logged at all (probes, scrapes). */
  ignore: (req: IncomingMessage) => boolean;
  /** The level of a finished request's line. */
  level: (req: IncomingMessage, res: ServerResponse) => Level;
}

const REQUEST_ID = /^[\w.-]{1,128}$/;

export function requestLog(logger: Logger, options: RequestLogOptions): RequestHandler {
  const lines = logger.child({}, { redact: { paths: [...TOP_LEVEL_SECRET_KEYS], censor: '[redacted]' } });
  return (req, res, next) => {
    const incoming = req.headers['x-request-id'];
    req.id = typeof incoming === 'string' && REQUEST_ID.test(incoming) ? incoming : randomUUID();
    res.setHeader('X-Request-Id', req.id);
    let child: Logger | undefined;
    Object.defineProperty(req, 'log', {
      configurable: true,
      enumerable: false,
      get: () => (child ??= logger.child({ req: requestFields(req) })),
    });
    if (!options.ignore(req)) {
      const started = Date.now();
      const done = (): void => {
        res.off('finish', done);
        res.off('close', done);
        const level = options.level(req, res);
        if (!lines.isLevelEnabled(level)) return;
        const line: Record<string, unknown> = { req: requestFields(req), ...factsOf(res) };
        line['res'] = { statusCode: res.statusCode };
        line['responseTime'] = Date.now() - started;
        // The client went away before the answer was written.
        if (!res.writableFinished) line['aborted'] = true;
        lines[level](line, 'request completed');
      };
      res.on('finish', done);
      res.on('close', done);
    }
    next();
  };
}
