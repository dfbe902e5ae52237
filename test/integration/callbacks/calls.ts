/** For the CallbackClient tests: task completion URLs, fresh guids, and the error a call rejects with. */
import { randomBytes } from 'node:crypto';

export const TASK_PATH = '/internal/v4/tasks';

export function taskUrl(base: string, guid: string): string {
  return `${base}${TASK_PATH}/${guid}/completed`;
}

export async function thrown(p: Promise<unknown>): Promise<Error> {
  try {
    await p;
  } catch (e) {
    return e as Error;
  }
  throw new Error('expected the promise to reject');
}

export function guid(): string {
  return randomBytes(8).toString('hex');
}
