/**
 * One log line per request. A handler's facts (process guid, generation, what it did) ride on that line
 * rather than on a line of their own: half the log volume and CPU at thousands of desires a second, and
 * one line to grep per request. The request itself is logged as id, method, url and peer only: headers
 * are where credentials travel, and serialising them all on every request was the API's largest cost.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';

interface WithFacts {
  locals?: { logFacts?: Record<string, unknown> };
}

/** Adds facts to this request's log line (later facts win). */
export function logFacts(res: ServerResponse, facts: Record<string, unknown>): void {
  const r = res as ServerResponse & WithFacts;
  r.locals ??= {};
  r.locals.logFacts = { ...r.locals.logFacts, ...facts };
}

const NONE: Record<string, unknown> = Object.freeze({});

/** pino-http's customProps: the facts gathered by the end of the request (none at its start). */
export function factsOf(_req: IncomingMessage, res: ServerResponse): Record<string, unknown> {
  return (res as ServerResponse & WithFacts).locals?.logFacts ?? NONE;
}

interface SerializedReq {
  id?: unknown;
  method?: string;
  url?: string;
  remoteAddress?: string;
}

/** What the log keeps of a request. */
export function requestSerializer(req: SerializedReq): SerializedReq {
  return { id: req.id, method: req.method, url: req.url, remoteAddress: req.remoteAddress };
}

/** What the log keeps of a response. */
export function responseSerializer(res: { statusCode?: number }): { statusCode?: number } {
  return { statusCode: res.statusCode };
}
