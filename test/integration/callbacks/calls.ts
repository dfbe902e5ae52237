/** For the CallbackClient tests: task completion URLs, fresh guids, and the error a call rejects with. */
import { randomBytes } from 'node:crypto';
import { type TaskCompletedBody, taskCompletedBody } from '@opi/callbacks';

export const TASK_PATH = '/internal/v4/tasks';

export function taskUrl(base: string, guid: string): string {
  return `${base}${TASK_PATH}/${guid}/completed`;
}

/** A task completion CC takes (the stand-in CC checks every body): its URL and body, to spread into postJson. */
export function taskCompletion(base: string, g = guid()): [string, TaskCompletedBody] {
  return [taskUrl(base, g), taskCompletedBody(g, { failed: false, failureReason: '' })];
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
