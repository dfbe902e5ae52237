/**
 * The fuzz inputs themselves: a generator that throws stops a fuzz run on the harness, not on the
 * service (a mutated body once built a circle out of fast-check's shared `{}`, one CI run in many).
 * Sampled many times here so such a fault shows on every run rather than by luck.
 */
import { describe, expect, it } from '@jest/globals';
import fc from 'fast-check';
import { desireBody, mutated, stagingBody, taskBody } from './arbitraries.js';
import { fuzz } from './run.js';

describe('fuzz inputs', () => {
  it('mutated bodies are always JSON, and mutating one never changes another', async () => {
    const bodies = fc.oneof(mutated(desireBody), mutated(taskBody), mutated(stagingBody));
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
});
