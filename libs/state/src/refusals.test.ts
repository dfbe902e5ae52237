import { describe, expect, it } from '@jest/globals';
import { parseRefusal, refusalValue } from './refusals.js';

describe('the stored refusal', () => {
  it('is its generation, a space and JSON, read back whole', () => {
    const r = {
      generation: 1764700000000001,
      reason: 'invalid',
      message: 'name "MY VAR" \ud800 is not allowed',
    };
    const value = refusalValue(r);
    expect(value.startsWith('1764700000000001 {')).toBe(true);
    expect(parseRefusal(value)).toEqual(r);
  });

  it.each([
    [null],
    [''],
    ['12'],
    ['x {"reason":"a","message":"b"}'],
    ['12 {'],
    ['12 {"reason":1,"message":"b"}'],
  ])('reads %p as none', (value) => {
    expect(parseRefusal(value)).toBeUndefined();
  });
});
