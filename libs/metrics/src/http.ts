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
  once(event: 'close', listener: () => void): unknown;
}

export function routeOf(req: RequestLike): string {
  const path = req.route?.path;
  if (typeof path !== 'string') return UNMATCHED_ROUTE;
  return `${req.baseUrl ?? ''}${path}`;
}

/** Mount before the routes (and before anything that may answer first, like the body parser). */
export function httpMetrics(metrics: OpiMetrics) {
  return (req: RequestLike, res: ResponseLike, next: () => void): void => {
    const started = performance.now();
    // 'close' comes after 'finish' and also when the client went away first, so every request counts.
    res.once('close', () => {
      const status = res.writableFinished ? String(res.statusCode) : 'aborted';
      metrics.observeHttpRequest(req.method, routeOf(req), status, performance.now() - started);
    });
    next();
  };
}
