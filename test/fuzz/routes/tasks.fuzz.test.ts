/**
 * Fuzzing the task and staging routes over a raw socket: never a 5xx, a 4xx has an error body and changes
 * nothing, an accepted request yields valid Kubernetes objects.
 */
import { afterAll, beforeAll, describe, it } from '@jest/globals';
import { stageCase, taskCase } from './task-cases.js';
import { fuzzRoute, startApi, stopApi } from './fuzzed-api.js';

beforeAll(startApi);
afterAll(stopApi);

describe('fuzzing every route', () => {
  it.each([
    ['POST, GET, DELETE /tasks/:task_guid', taskCase, 500],
    ['POST /stage/:staging_guid', stageCase, 400],
  ] as const)(
    '%s: never a 5xx, a 4xx has an error body and changes nothing, an accepted request yields valid objects',
    (name, arb, base) => fuzzRoute(name, arb, base),
    600_000,
  );
});
