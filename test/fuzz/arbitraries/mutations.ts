/** Valid bodies mutated (fields missing, of the wrong type, null, extra), and deeply nested JSON as text. */
import fc from 'fast-check';
import { hostile } from './names.js';

export type Body = Record<string, unknown>;

/** Any JSON value that is hostile as a field's value. */
const badValue: fc.Arbitrary<unknown> = fc.oneof(
  fc.constant(null),
  fc.constantFrom(true, 0, -1, 1.5, 2 ** 53, -(2 ** 31), 1e308, '', [], {}, '0', 'NaN'),
  hostile,
  fc.jsonValue({ maxDepth: 3 }),
);

type Mutation = { op: 'delete' | 'set' | 'add'; pick: number; depth: number; key: string; value: unknown };

const mutation: fc.Arbitrary<Mutation> = fc.record({
  op: fc.constantFrom('delete', 'set', 'set', 'add'),
  pick: fc.nat(),
  depth: fc.nat({ max: 3 }),
  key: fc.oneof(hostile, fc.string({ maxLength: 10 })),
  value: badValue,
});

function isObject(v: unknown): v is Body {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** Applies mutations to a deep copy: each walks down up to `depth` objects, then deletes, sets or adds. */
function mutate(body: Body, mutations: Mutation[]): Body {
  if (!isObject(body)) return body;
  const copy = structuredClone(body);
  for (const mutation of mutations) {
    // Each value is placed as its own copy: fc.constantFrom hands out the same `{}` and `[]` every time,
    // so a later mutation walking into a shared value would write into it (a circle, when it sets the
    // same value there, and a changed constant for every later case).
    const m = { ...mutation, value: structuredClone(mutation.value) };
    let target: Body = copy;
    for (let d = 0; d < m.depth; d++) {
      const children = Object.keys(target).filter((k) => isObject(target[k]));
      const next = children[m.pick % Math.max(1, children.length)];
      if (next === undefined) break;
      target = target[next] as Body;
    }
    const keys = Object.keys(target);
    const existing = keys[m.pick % Math.max(1, keys.length)];
    if (m.op === 'add' || existing === undefined) {
      Object.defineProperty(target, m.key, {
        value: m.value,
        enumerable: true,
        writable: true,
        configurable: true,
      });
    } else if (m.op === 'delete') {
      Reflect.deleteProperty(target, existing);
    } else {
      target[existing] = m.value;
    }
  }
  return copy;
}

/** A valid body of `arb`, mutated 1-4 times. */
export const mutated = (arb: fc.Arbitrary<Body>): fc.Arbitrary<Body> =>
  fc.tuple(arb, fc.array(mutation, { minLength: 1, maxLength: 4 })).map(([b, ms]) => mutate(b, ms));

/** `depth` nested arrays or objects, as text (JSON.stringify would need as deep a stack to write it). */
export const deepJson = fc
  .tuple(fc.integer({ min: 100, max: 20_000 }), fc.constantFrom('[', '{"a":', '{"lifecycle":'), fc.boolean())
  .map(([depth, open, closed]) => {
    const close = open === '[' ? ']' : '}';
    return open.repeat(depth) + (open === '[' ? '' : '1') + (closed ? close.repeat(depth) : '');
  });
