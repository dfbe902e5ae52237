/**
 * Posting to CC from a job: delivered → done; refused (4xx) → done, logged (CC will never take it:
 * e.g. 400 for a task it already failed); unavailable → thrown, so the queue retries with backoff; a
 * callback URL that cannot work → a permanent failure.
 */
import { UnrecoverableError } from 'bullmq';
import { CallbackUrlError } from '@opi/callbacks';
import type { HandlerDeps } from '../deps.js';

export async function postToCc(
  deps: HandlerDeps,
  url: string,
  body: unknown,
  what: Record<string, unknown>,
): Promise<string> {
  try {
    const result = await deps.callbacks.postJson(url, body);
    if (result.kind === 'rejected') {
      deps.logger.warn(
        { ...what, status: result.status, answer: result.body },
        'CC refused the report; not retrying',
      );
      return `refused by CC (${result.status})`;
    }
    return `delivered (${result.status})`;
  } catch (err) {
    if (err instanceof CallbackUrlError) throw new UnrecoverableError(err.message);
    throw err;
  }
}

/**
 * After CC took a report, nothing may post it again: a failed write of "reported" would fail the job, and
 * its retry would post a second time. So that write is retried here, through a cluster answering 5xx or
 * a Redis restart, before the job gives up (only then, or if the worker dies in between, can CC get the
 * report twice; it answers a repeated completion with 400).
 */
export async function afterDelivery<T>(
  deps: HandlerDeps,
  what: string,
  write: () => Promise<T>,
  tries = 20,
): Promise<T> {
  for (let i = 1; ; i++) {
    try {
      return await write();
    } catch (err) {
      if (i >= tries) throw err;
      deps.logger.warn(
        { err: err instanceof Error ? err.message : String(err), try: i },
        `${what}: retrying`,
      );
      await new Promise((r) => setTimeout(r, Math.min(100 * 2 ** i, 5000)));
    }
  }
}
