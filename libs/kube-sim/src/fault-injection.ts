/**
 * Applies the fault configuration (faults.ts) to one resource request before it is served: a delay, a
 * dropped connection, an error Status or a conflict, as the tests of retries and resilience ask for.
 */
import type http from 'node:http';
import { StatusError, errors } from './errors.js';
import type { Faults, Verb } from './faults.js';
import { type Res, sendError } from './http-io.js';
import type { Route } from './routing.js';

/** Waits the injected delay, then answers with the injected fault; true when the request was answered. */
export async function injectFault(
  faults: Faults,
  req: http.IncomingMessage,
  res: Res,
  route: Route,
  verb: Verb,
): Promise<boolean> {
  const decision = faults.decide(verb, route.resource.plural);
  if (decision.delayMs > 0) await new Promise((r) => setTimeout(r, decision.delayMs));
  switch (decision.kind) {
    case 'drop':
      req.socket.destroy();
      return true;
    case 'error': {
      const retryAfter = faults.current.retryAfterSeconds;
      const err =
        decision.code === 429
          ? errors.tooManyRequests(retryAfter)
          : decision.code === 503
            ? new StatusError(
                503,
                'ServiceUnavailable',
                'the server is currently unable to handle the request',
                {
                  retryAfterSeconds: retryAfter,
                },
              )
            : new StatusError(
                decision.code,
                reasonOf(decision.code),
                `injected fault: ${reasonOf(decision.code)}`,
              );
      sendError(res, err);
      return true;
    }
    case 'conflict':
      sendError(res, errors.conflict(route.resource.plural, route.resource.group, route.name ?? ''));
      return true;
    case 'none':
      return false;
  }
}

/** The Status reason a real apiserver pairs with an HTTP code (apimachinery's StatusReason*). */
function reasonOf(code: number): string {
  const reasons: Record<number, string> = {
    400: 'BadRequest',
    401: 'Unauthorized',
    403: 'Forbidden',
    404: 'NotFound',
    405: 'MethodNotAllowed',
    409: 'Conflict',
    410: 'Expired',
    413: 'RequestEntityTooLarge',
    415: 'UnsupportedMediaType',
    422: 'Invalid',
    429: 'TooManyRequests',
    503: 'ServiceUnavailable',
    504: 'Timeout',
  };
  return reasons[code] ?? 'InternalError';
}
