/**
 * The zod-free desire reader (libs/contract/src/desire-fast.ts) against zod itself, on valid bodies,
 * mutated ones, ones with a single field at or past a limit or of the wrong type, and CC's recorded
 * bodies: what it returns equals what desireLrpSchema returns; it returns nothing zod refuses; and it
 * takes every body zod accepts, so the API's busiest route does not quietly fall back to zod.
 */
import { describe, expect, it } from '@jest/globals';
import fc from 'fast-check';
import { DESIRE_LIMITS, desireLrpSchema, parseDesireFast } from '@opi/contract';
import { loadCorpus } from '../support/replay-corpus.js';
import { type Body, desireBody, hostile, mutated } from './arbitraries.js';
import { fuzz } from './run.js';

const wire = (b: unknown): unknown => JSON.parse(JSON.stringify(b)) as unknown;

/** Whether any object in `v` has an own `__proto__` key: the one case the fast reader leaves to zod. */
function hasProtoKey(v: unknown): boolean {
  if (typeof v !== 'object' || v === null) return false;
  if (!Array.isArray(v) && Object.prototype.hasOwnProperty.call(v, '__proto__')) return true;
  return Object.values(v).some(hasProtoKey);
}

/** Both readers agree on `body`: the same value, or the fast one declines what zod refuses. */
function agree(body: unknown): void {
  const z = desireLrpSchema.safeParse(body);
  const fast = parseDesireFast(body);
  if (z.success) {
    if (!hasProtoKey(body)) expect(fast).toBeDefined();
    if (fast !== undefined) expect(fast).toEqual(z.data);
  } else {
    expect(fast).toBeUndefined();
  }
}

/** Every place in a body a value sits (objects' keys and arrays' items, at any depth). */
function paths(v: unknown, at: (string | number)[] = []): (string | number)[][] {
  if (typeof v !== 'object' || v === null) return [];
  const keys: (string | number)[] = Array.isArray(v) ? v.map((_, i) => i) : Object.keys(v);
  return keys.flatMap((k) => [[...at, k], ...paths((v as Record<string | number, unknown>)[k], [...at, k])]);
}

function replaced(body: unknown, path: (string | number)[], value: unknown): unknown {
  const copy = structuredClone(body) as Record<string | number, unknown>;
  let target = copy;
  for (const k of path.slice(0, -1)) target = target[k] as Record<string | number, unknown>;
  const last = path[path.length - 1] as string | number;
  if (value === undefined) Reflect.deleteProperty(target, last);
  else target[last] = value;
  return copy;
}

/** Lengths at and just past each limit (the larger ones only as numbers, not as strings), wrong types. */
const limits = [...new Set(Object.values(DESIRE_LIMITS))];
const edgeValue = fc.oneof(
  fc.constantFrom<unknown>(null, undefined, '', ' ', 'x', true, false, [], {}, [null], { a: null }, '1'),
  fc.constantFrom(-1, 0, 1, 1.5, 2, 3, 16, 17, 63, 64, 100, 101, 65535, 65536, 2 ** 53, -(2 ** 53), 1e300),
  fc.constantFrom(...limits.flatMap((n) => [n, n + 1])),
  fc.constantFrom(...limits.filter((n) => n <= 16 * 1024).flatMap((n) => ['a'.repeat(n), 'a'.repeat(n + 1)])),
  fc.constantFrom(
    ' image:1 ',
    '/data',
    '/',
    'abc',
    'ABC',
    'a-b',
    '-a',
    'a_b',
    'port',
    'http',
    'none',
    'process',
  ),
  hostile,
);

describe('the desire body read without zod', () => {
  it('reads every valid body as zod does', async () => {
    await fuzz(
      'fast desire reader: valid bodies',
      fc.property(desireBody, (body) => {
        agree(wire(body));
      }),
      500,
    );
  });

  it('agrees with zod on mutated bodies', async () => {
    await fuzz(
      'fast desire reader: mutated bodies',
      fc.property(mutated(desireBody), (body: Body) => {
        agree(wire(body));
      }),
      1500,
    );
  });

  it('agrees with zod when any one field, at any depth, sits at or past a limit or has the wrong type', async () => {
    await fuzz(
      'fast desire reader: one field at its edge',
      fc.property(desireBody, fc.nat(), edgeValue, (b, pick, value) => {
        const body = wire(b);
        const all = paths(body);
        const path = all[pick % all.length];
        if (path) agree(replaced(body, path, value));
      }),
      3000,
    );
  });

  it("reads CC's recorded desire bodies as zod does", () => {
    const desires = loadCorpus().filter((f) => f.client === 'apps_rest_client' && f.method === 'desire_app');
    for (const f of desires) agree(f.request.body);
    expect(desires.filter((f) => parseDesireFast(f.request.body) !== undefined).length).toBeGreaterThan(0);
  });
});
