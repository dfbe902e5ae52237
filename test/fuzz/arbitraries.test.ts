/**
 * The fuzz inputs themselves: a generator that throws stops a fuzz run on the harness, not on the
 * service (a mutated body once built a circle out of fast-check's shared `{}`, one CI run in many).
 * Sampled many times here so such a fault shows on every run rather than by luck. And the valid bodies
 * must stay valid as the contract's schemas change (a body the schema refuses tests only the refusal).
 */
import { describe, expect, it } from '@jest/globals';
import fc from 'fast-check';
import type { z } from 'zod';
import {
  describeIssues,
  desireLrpSchema,
  stagingRequestSchema,
  taskRequestSchema,
  updateLrpSchema,
} from '@opi/contract';
import { type Body, desireBody, mutated, stagingBody, taskBody, updateBody } from './arbitraries.js';
import { fuzz } from './run.js';

describe('fuzz inputs', () => {
  it('mutated bodies are always JSON, and mutating one never changes another', async () => {
    const bodies = fc.oneof(
      mutated(desireBody),
      mutated(taskBody),
      mutated(stagingBody),
      mutated(updateBody as fc.Arbitrary<Body>),
    );
    await fuzz(
      'mutated bodies',
      fc.property(fc.array(bodies, { minLength: 2, maxLength: 6 }), (batch) => {
        const texts = batch.map((b) => JSON.stringify(b));
        // Generating more must not reach back into bodies already made (shared constants).
        fc.sample(bodies, 5);
        expect(batch.map((b) => JSON.stringify(b))).toEqual(texts);
      }),
      3000,
    );
  });

  // The desire bodies straddle one limit on purpose: annotation keys and sizes just past what the schema
  // allows (so the routes' fuzzing sees those refused). Nothing else may be refused.
  it.each([
    ['desire', desireBody, desireLrpSchema, ['user_defined_annotations'], 300],
    ['update', updateBody as fc.Arbitrary<Body>, updateLrpSchema, [], 300],
    ['task', taskBody as fc.Arbitrary<Body>, taskRequestSchema, [], 300],
    ['staging', stagingBody as fc.Arbitrary<Body>, stagingRequestSchema, [], 300],
  ] as [string, fc.Arbitrary<Body>, z.ZodType, string[], number][])(
    'valid %s bodies are accepted by the contract schema',
    async (name, arb, schema, boundaries, runs) => {
      let accepted = 0;
      const cases = await fuzz(
        `valid ${name} bodies`,
        fc.property(arb, (body) => {
          // As it goes on the wire.
          const r = schema.safeParse(JSON.parse(JSON.stringify(body)));
          if (r.success) {
            accepted++;
            return;
          }
          const outside = r.error.issues.filter((i) => !boundaries.includes(String(i.path[0])));
          if (outside.length) throw new Error(`refused: ${describeIssues(r.error)}`);
        }),
        runs,
      );
      // Not all refused at the boundary (a smoke run, FUZZ_RUNS=0.01, may see too few to tell).
      if (cases >= 50) expect(accepted).toBeGreaterThan(0);
    },
  );
});
