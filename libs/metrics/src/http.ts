/**
 * Express middleware counting requests by route pattern (`/apps/:process_guid`), never by raw URL: URLs
 * carry guids, and one series per guid would grow without bound. Typed structurally, so this package
 * needs no Express.
 */
import type { OpiMetrics } from './metrics.js';

/** The route label of requests no route took: unknown paths, and bodies refused before routing. */
export const UNMATCHED_ROUTE = 'unmatched';

export interface RequestLike {
  method: string;
  baseUrl?: string;
  /** Set by Express to the matched route; its `path` is the pattern. */
  route?: { path?: unknown } | undefined;
}

export interface ResponseLike {
  statusCode: number;
  writableFinished: boolean;
}

export function routeOf(req: RequestLike): string {
  const path = req.route?.path;
  if (typeof path !== 'string') return UNMATCHED_ROUTE;
  return `${req.baseUrl ?? ''}${path}`;
}

/**
 * Counts one ended request: call it once per request when its response closes ('close' comes after
 * 'finish', and also when the client went away first, counted as `aborted`). The API calls it from the
 * request log's one 'close' listener rather than adding a listener of its own to every request.
 */
export function httpObserver(metrics: OpiMetrics) {
  return (req: RequestLike, res: ResponseLike, elapsedMs: number): void => {
    const status = res.writableFinished ? String(res.statusCode) : 'aborted';
    metrics.observeHttpRequest(req.method, routeOf(req), status, elapsedMs);
  };
}
