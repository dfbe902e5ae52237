/**
 * One log line per request. A handler's facts (process guid, generation, what it did) ride on that line
 * rather than on a line of their own: half the log volume and CPU at thousands of desires a second, and
 * one line to grep per request. The request itself is logged as id, method, url and peer only: headers
 * are where credentials travel, and are never logged.
 *
 * It stands in for pino-http and keeps its line (`req`, the facts, `res`, `responseTime`, "request
 * completed"), without pino-http's child loggers per request: `req.log` is made only when a handler logs
 * on its own, which most requests never do, and the line is one plain call.
 *
 * The line is made of fixed request fields and flat facts only (the types say so), so it is redacted by
 * key at its top level; the logger's nested wildcard paths found nothing there and cost as much as the
 * rest of the line. A handler's own lines (`req.log`) keep the full redaction.
 */
import { randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Request, RequestHandler, Response } from 'express';
import { type Logger, TOP_LEVEL_SECRET_KEYS } from '@opi/logging';

type Level = 'error' | 'warn' | 'info' | 'debug';

/** What a handler logs with: lines that carry its request (a child logger, made on the first line). */
export type RequestLogger = Record<Level, (obj: Record<string, unknown>, msg: string) => void>;

declare module 'node:http' {
  interface IncomingMessage {
    /** X-Request-Id: the client's, when it is a plain token, else a new one. */
    id: string;
    /** A logger whose lines carry this request. */
    log: RequestLogger;
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

/**
 * req.log: a plain object set on each request (not a getter defined per request, which costs more than
 * the rest of this middleware), whose child logger is made on its first line.
 */
class LazyRequestLogger implements RequestLogger {
  private child: Logger | undefined;
  constructor(
    private readonly logger: Logger,
    private readonly req: IncomingMessage,
  ) {}
  private get lines(): Logger {
    return (this.child ??= this.logger.child({ req: requestFields(this.req) }));
  }
  error(obj: Record<string, unknown>, msg: string): void {
    this.lines.error(obj, msg);
  }
  warn(obj: Record<string, unknown>, msg: string): void {
    this.lines.warn(obj, msg);
  }
  info(obj: Record<string, unknown>, msg: string): void {
    this.lines.info(obj, msg);
  }
  debug(obj: Record<string, unknown>, msg: string): void {
    this.lines.debug(obj, msg);
  }
}

export interface RequestLogOptions {
  /** Requests not logged at all (probes, scrapes). */
  ignore: (req: IncomingMessage) => boolean;
  /** The level of a finished request's line. */
  level: (req: IncomingMessage, res: ServerResponse) => Level;
  /**
   * Called for every request when it ends, logged or not (the request metrics): from the same one
   * 'close' listener, rather than each adding its own to every request.
   */
  onEnd?: ((req: Request, res: Response, elapsedMs: number) => void) | undefined;
}

const REQUEST_ID = /^[\w.-]{1,128}$/;

export function requestLog(logger: Logger, options: RequestLogOptions): RequestHandler {
  const lines = logger.child({}, { redact: { paths: [...TOP_LEVEL_SECRET_KEYS], censor: '[redacted]' } });
  const { onEnd } = options;
  return (req, res, next) => {
    const incoming = req.headers['x-request-id'];
    req.id = typeof incoming === 'string' && REQUEST_ID.test(incoming) ? incoming : randomUUID();
    res.setHeader('X-Request-Id', req.id);
    req.log = new LazyRequestLogger(logger, req);
    const logged = !options.ignore(req);
    if (logged || onEnd) {
      const started = performance.now();
      // 'close' comes after 'finish', and also when the client went away first: one listener for both.
      res.once('close', () => {
        const elapsedMs = performance.now() - started;
        onEnd?.(req, res, elapsedMs);
        if (!logged) return;
        const level = options.level(req, res);
        if (!lines.isLevelEnabled(level)) return;
        const line: Record<string, unknown> = { req: requestFields(req), ...factsOf(res) };
        line['res'] = { statusCode: res.statusCode };
        line['responseTime'] = Math.round(elapsedMs);
        // The client went away before the answer was written.
        if (!res.writableFinished) line['aborted'] = true;
        lines[level](line, 'request completed');
      });
    }
    next();
  };
}
