/**
 * Fuzzing the lists, other methods and unknown paths, then every route's cases interleaved: never a 5xx,
 * a 4xx has an error body and changes nothing, an accepted request yields valid Kubernetes objects.
 */
import { afterAll, beforeAll, describe, it } from '@jest/globals';
import { anyCase, otherCase } from './other-cases.js';
import { fuzzRoute, startApi, stopApi } from './fuzzed-api.js';

beforeAll(startApi);
afterAll(stopApi);

describe('fuzzing every route', () => {
  it.each([
    ['lists, other methods and unknown paths', otherCase, 400],
    ['any route, interleaved', anyCase, 1500],
  ] as const)(
    '%s: never a 5xx, a 4xx has an error body and changes nothing, an accepted request yields valid objects',
    (name, arb, base) => fuzzRoute(name, arb, base),
    600_000,
  );
});
