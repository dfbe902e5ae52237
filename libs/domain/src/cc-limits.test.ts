import { describe, expect, it } from '@jest/globals';
import { CC_STAGING_ERROR_PREFIX, STAGING_MESSAGE_MAX, boundText } from './cc-limits.js';

describe('boundText', () => {
  it.each<[string, string, number, string]>([
    ['fits', 'abc', 3, 'abc'],
    ['cut, marked', 'abcdef', 4, 'abc…'],
    ['counts code points, as the databases do', '😀😀😀', 3, '😀😀😀'],
    ['never splits a surrogate pair', '😀😀😀😀', 3, '😀😀…'],
    ['empty', '', 5, ''],
  ])('%s', (_what, text, max, expected) => {
    expect(boundText(text, max)).toBe(expected);
  });

  it("leaves a staging message room for CC's prefix in varchar(255)", () => {
    expect(CC_STAGING_ERROR_PREFIX.length + STAGING_MESSAGE_MAX).toBe(255);
  });
});
