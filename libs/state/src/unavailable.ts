/**
 * StoreUnavailableError: Redis cannot be reached right now. The stores throw it for the driver's
 * connection-level failures, so their callers (the API's 503) test a type rather than ioredis' messages.
 */
import type { Cluster, Redis } from 'ioredis';
import { UnavailableError } from '@opi/domain';
import { isRedisUnreachable, mapRejections } from '@opi/queue';

export class StoreUnavailableError extends UnavailableError {
  constructor(cause?: unknown) {
    super('the state store is unavailable, try again');
    this.name = 'StoreUnavailableError';
    if (cause !== undefined) this.cause = cause;
  }
}

/** A connection-level failure as StoreUnavailableError; any other error as it is. */
export function storeError(err: unknown): unknown {
  if (err instanceof StoreUnavailableError || !(err instanceof Error)) return err;
  return isRedisUnreachable(err) ? new StoreUnavailableError(err) : err;
}

function rethrowAsStoreError(err: unknown): never {
  throw storeError(err);
}

/**
 * `redis` as a store uses it: every command and script that fails to reach Redis rejects with
 * StoreUnavailableError. A MULTI's or pipeline's `exec` is the store's to map (see `replies`).
 */
export function storeClient<T extends Redis | Cluster>(redis: T): T {
  return mapRejections(redis, storeError);
}

/**
 * The replies of a MULTI or pipeline, or its first error: each command reports its own, and an
 * unreachable Redis (no replies at all) must not read as empty answers.
 */
export async function replies(batch: {
  exec(): Promise<[Error | null, unknown][] | null>;
}): Promise<unknown[]> {
  const res = await batch.exec().catch(rethrowAsStoreError);
  if (!res) throw new StoreUnavailableError();
  for (const [err] of res) if (err) throw storeError(err);
  return res.map(([, value]) => value);
}
