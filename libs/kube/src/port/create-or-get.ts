/** Create-or-get: the one way to create an object whose name may already be taken (a retry, a race). */
import { AlreadyExistsError } from './errors.js';

/**
 * What `createOrGet` found: the object it created, or the one that already had the name. `existing` is
 * undefined when there was no `get`, or when that object was deleted again before the read; `refusal`
 * is the create's AlreadyExists, for a caller that treats that as a failure.
 */
export type CreateOrGetResult<T> =
  { created: true; object: T } | { created: false; existing: T | undefined; refusal: AlreadyExistsError };

/**
 * Runs `create`; when the name is taken (AlreadyExists) reads the object that has it with `get`, if given.
 * Any other error is thrown. Never updates: what to do with an existing object that differs is the caller's.
 */
export async function createOrGet<T>(
  create: () => Promise<T>,
  get?: () => Promise<T | undefined>,
): Promise<CreateOrGetResult<T>> {
  try {
    return { created: true, object: await create() };
  } catch (err) {
    if (!(err instanceof AlreadyExistsError)) throw err;
    return { created: false, existing: get ? await get() : undefined, refusal: err };
  }
}
