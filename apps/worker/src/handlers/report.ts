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
