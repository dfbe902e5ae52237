/**
 * How one of a reflector's watches ended, told from how long it ran, what it delivered and what it
 * failed with: the reflector re-watches, backs off or relists by it.
 */
import { type CallContext, KubeApiError, classify } from '../port/errors.js';
import type { WatchStatus } from '../port/port.js';

export type WatchOutcome =
  /** stop() or relist() ended it. */
  | { kind: 'interrupted' }
  /** The server closed it at its timeoutSeconds, or the client deadline passed. */
  | { kind: 'timeout' }
  /** `short`: ended within a second having delivered nothing. */
  | { kind: 'closed'; short: boolean }
  /** `immediate`: the list's own version expired at once, so relisting at once could loop. */
  | { kind: 'expired'; immediate: boolean }
  | { kind: 'error'; error: KubeApiError };

/** How one watch went: `fresh` while it started at a list's version and has delivered nothing. */
export interface WatchRun {
  ranMs: number;
  timeoutSeconds: number;
  fresh: boolean;
}

/** A watch that closes sooner than this without delivering anything counts as a failure (as client-go). */
const SHORT_WATCH_MS = 1000;
/**
 * A normal close this close to timeoutSeconds (1 s, or a tenth of a short timeout) is the server's
 * timeout: its timer starts a little after ours, and clocks differ.
 */
const TIMEOUT_TOLERANCE_MS = 1000;

function isExpired(status: number | undefined, reason: string | undefined): boolean {
  return status === 410 || reason === 'Expired' || reason === 'Gone';
}

function expired(run: WatchRun): WatchOutcome {
  return { kind: 'expired', immediate: run.fresh && run.ranMs < SHORT_WATCH_MS };
}

/** The server closed the stream without an error. */
export function closedOutcome(run: WatchRun, delivered: number): WatchOutcome {
  const tolerance = Math.min(TIMEOUT_TOLERANCE_MS, run.timeoutSeconds * 100);
  if (run.ranMs >= run.timeoutSeconds * 1000 - tolerance) return { kind: 'timeout' };
  return { kind: 'closed', short: delivered === 0 && run.ranMs < SHORT_WATCH_MS };
}

/** The request was refused or the stream failed (already classified). */
export function failedOutcome(run: WatchRun, error: KubeApiError): WatchOutcome {
  if (isExpired(error.status, error.reason)) return expired(run);
  if (error.status === undefined && error.reason === 'Timeout' && run.ranMs >= run.timeoutSeconds * 1000) {
    // The client deadline: the server kept a silent stream open past its timeout.
    return { kind: 'timeout' };
  }
  return { kind: 'error', error };
}

/** The stream sent an ERROR event carrying this Status. */
export function errorEventOutcome(run: WatchRun, status: WatchStatus, ctx: CallContext): WatchOutcome {
  if (isExpired(status.code, status.reason)) return expired(run);
  // classify reads a numeric `code` and a Status `body`, as client-node's ApiException carries them.
  const error =
    typeof status.code === 'number'
      ? classify({ code: status.code, body: status }, ctx)
      : new KubeApiError({
          status: undefined,
          reason: status.reason ?? 'Unknown',
          message: status.message ?? 'the watch sent an ERROR event',
          transient: true,
          operation: `watch ${ctx.resource}${ctx.namespace !== undefined ? ` ${ctx.namespace}` : ''}`,
        });
  return { kind: 'error', error };
}
