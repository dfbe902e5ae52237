import { describe, expect, it } from '@jest/globals';
import { SettingsError, parseSettings } from './settings.js';

describe('callback retry settings', () => {
  it('default to 2 s doubling up to 30 s, for 24 h', () => {
    expect(parseSettings({}).cc.retry).toEqual({
      firstDelayMs: 2000,
      maxDelayMs: 30_000,
      windowMs: 24 * 3_600_000,
    });
  });

  it('read the variables', () => {
    const s = parseSettings({
      OPI_CALLBACK_BACKOFF_MS: '100',
      OPI_CALLBACK_MAX_DELAY_MS: '5000',
      OPI_CALLBACK_RETRY_WINDOW_MS: '3600000',
    });
    expect(s.cc.retry).toEqual({ firstDelayMs: 100, maxDelayMs: 5000, windowMs: 3_600_000 });
  });

  it('refuse OPI_CALLBACK_ATTEMPTS, whatever its value, naming what replaced it', () => {
    for (const value of ['15', '1', 'x']) {
      expect(() => parseSettings({ OPI_CALLBACK_ATTEMPTS: value })).toThrow(SettingsError);
      expect(() => parseSettings({ OPI_CALLBACK_ATTEMPTS: value })).toThrow(
        /OPI_CALLBACK_ATTEMPTS is no longer read.*OPI_CALLBACK_RETRY_WINDOW_MS.*OPI_CALLBACK_MAX_DELAY_MS/,
      );
    }
    // Empty means unset, as everywhere.
    expect(parseSettings({ OPI_CALLBACK_ATTEMPTS: '' }).cc.retry.windowMs).toBe(24 * 3_600_000);
  });

  it.each([
    ['OPI_CALLBACK_MAX_DELAY_MS', '0'],
    ['OPI_CALLBACK_RETRY_WINDOW_MS', '50'],
    ['OPI_CALLBACK_RETRY_WINDOW_MS', 'a day'],
  ])('refuse a bad %s, naming it', (name, value) => {
    expect(() => parseSettings({ [name]: value })).toThrow(SettingsError);
    expect(() => parseSettings({ [name]: value })).toThrow(name);
  });
});
