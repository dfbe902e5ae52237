import { describe, expect, it } from '@jest/globals';
import { SettingsError, parseSettings } from './settings.js';

describe('cache writer settings', () => {
  it("default to a 10 min resync and client-go's Lease timings", () => {
    const s = parseSettings({});
    expect(s.resyncIntervalMs).toBe(600_000);
    expect(s.lease).toEqual({
      name: 'opi-cache-writer',
      durationMs: 15_000,
      renewDeadlineMs: 10_000,
      retryPeriodMs: 2000,
    });
  });

  it('read the variables', () => {
    const s = parseSettings({
      OPI_RESYNC_INTERVAL_MS: '60000',
      OPI_LEASE_NAME: 'writer',
      OPI_LEASE_DURATION_MS: '3000',
      OPI_LEASE_RENEW_DEADLINE_MS: '2000',
      OPI_LEASE_RETRY_PERIOD_MS: '500',
    });
    expect(s.resyncIntervalMs).toBe(60_000);
    expect(s.lease).toEqual({ name: 'writer', durationMs: 3000, renewDeadlineMs: 2000, retryPeriodMs: 500 });
  });

  it.each([
    [{ OPI_LEASE_RENEW_DEADLINE_MS: '15000' }],
    [{ OPI_LEASE_RETRY_PERIOD_MS: '10000' }],
    [{ OPI_LEASE_DURATION_MS: '5000' }],
  ])('refuse Lease timings a holder could outlive: %j', (env) => {
    expect(() => parseSettings(env)).toThrow(SettingsError);
    expect(() => parseSettings(env)).toThrow('OPI_LEASE_RETRY_PERIOD_MS < OPI_LEASE_RENEW_DEADLINE_MS');
  });

  it('refuse a Lease name that is not a DNS label', () => {
    expect(() => parseSettings({ OPI_LEASE_NAME: 'Not_A_Label' })).toThrow('OPI_LEASE_NAME');
  });
});
