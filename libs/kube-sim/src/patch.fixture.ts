/** Shared by the patch tests: the StatusError a call throws, inputs frozen against mutation, deep copies. */
import { StatusError } from './errors.js';
import type { Json } from './types.js';

/** The StatusError `fn` throws; fails when it returns or throws anything else. */
export function thrown(fn: () => unknown): StatusError {
  try {
    fn();
  } catch (err) {
    if (err instanceof StatusError) return err;
    throw err;
  }
  throw new Error('expected a StatusError');
}

/** Frozen inputs make any in-place write throw (ESM code is strict), so passing tests prove no mutation. */
export function deepFreeze<T>(value: T): T {
  if (typeof value === 'object' && value !== null) {
    for (const v of Object.values(value)) deepFreeze(v);
    Object.freeze(value);
  }
  return value;
}

export function copy(value: Json): Json {
  return JSON.parse(JSON.stringify(value)) as Json;
}
