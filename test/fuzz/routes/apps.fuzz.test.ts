/**
 * Fuzzing the app routes (desire, update, get, stop, stop/:index, instances) over a raw socket: never a
 * 5xx, a 4xx has an error body and changes nothing, an accepted request yields valid Kubernetes objects.
 */
import { afterAll, beforeAll, describe, it } from '@jest/globals';
import { desireCase, lrpReadCase, updateCase } from './app-cases.js';
import { fuzzRoute, startApi, stopApi } from './fuzzed-api.js';

beforeAll(startApi);
afterAll(stopApi);

describe('fuzzing every route', () => {
  it.each([
    ['PUT /apps/:process_guid (desire)', desireCase, 800],
    ['POST /apps/:process_guid (update)', updateCase, 400],
    ['GET, PUT stop, stop/:index, instances of /apps/:guid/:version', lrpReadCase, 500],
  ] as const)(
    '%s: never a 5xx, a 4xx has an error body and changes nothing, an accepted request yields valid objects',
    (name, arb, base) => fuzzRoute(name, arb, base),
    600_000,
  );
});
