/**
 * The path parameter schemas: which guids, versions and instance indexes a route accepts, and the message
 * each refusal carries.
 */
import { describe, expect, it } from '@jest/globals';
import { describeIssues, guidParam, indexParam, versionParam } from './schemas.js';

describe('path parameter schemas', () => {
  it.each(['0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0', 'a', 'A.b_c-9', 'x'.repeat(63)])(
    'accepts the guid/version %j',
    (value) => {
      expect(guidParam.safeParse(value).success).toBe(true);
      expect(versionParam.safeParse(value).success).toBe(true);
    },
  );

  it.each(['', 'a/b', '-a', 'a-', '_a', 'a.', 'x'.repeat(64), 'a b', 'ü'])(
    'refuses the guid/version %j',
    (value) => {
      const g = guidParam.safeParse(value);
      const v = versionParam.safeParse(value);
      expect(g.success).toBe(false);
      expect(v.success).toBe(false);
      if (!g.success) expect(describeIssues(g.error)).toContain('guid must be');
      if (!v.success) expect(describeIssues(v.error)).toContain('version must be');
    },
  );

  it.each(['0', '1', '42', '99999', '007'])('accepts the index %j', (value) => {
    expect(indexParam.safeParse(value).success).toBe(true);
  });

  it.each(['', '-1', '1.5', 'abc', '1e2', ' 1', '1 ', '0x1', '123456'])('refuses the index %j', (value) => {
    const r = indexParam.safeParse(value);
    expect(r.success).toBe(false);
    if (!r.success) expect(describeIssues(r.error)).toContain('index must be a non-negative integer');
  });
});
