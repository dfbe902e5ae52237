import { describe, expect, it } from '@jest/globals';
import { inboxEntry, inboxEntryLua, parseInboxEntry } from './inbox.js';

describe('the converge inbox entry', () => {
  it('reads back any process guid, spaces and newlines included, and refuses what no write makes', () => {
    for (const pg of ['a b c', 'x\ny', ' lead', 'ü-✓']) {
      expect(parseInboxEntry(inboxEntry(pg, 7))).toEqual({ processGuid: pg, cause: 'g7', fresh: false });
      expect(parseInboxEntry(inboxEntry(pg, 7, true))).toEqual({ processGuid: pg, cause: 'g7', fresh: true });
    }
    for (const bad of ['', 'g7', 'g7 1', 'g7 2 pg', 'x7 1 pg', 'g 1 pg', 'g7  pg']) {
      expect(parseInboxEntry(bad)).toBeUndefined();
    }
  });

  it('is built in Lua from the same fields, separator and order (run on Redis: inbox-pump.test.ts)', () => {
    expect(inboxEntryLua('gs', 'ARGV[2]', true)).toBe(`'g' .. gs .. ' ' .. '1' .. ' ' .. ARGV[2]`);
  });
});
