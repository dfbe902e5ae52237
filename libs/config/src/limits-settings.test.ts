import { describe, expect, it } from '@jest/globals';
import { SettingsError, parseSettings } from './settings.js';

describe('limit settings', () => {
  it('default to limits a real CC never meets', () => {
    const s = parseSettings({});
    expect(s.limits).toEqual({ ratePerMinute: 120_000, maxQueueDepth: 150_000 });
    expect(s.kube).toEqual({ timeoutMs: 30_000, maxConcurrentRequests: 32 });
  });

  it('read the variables, 0 turning the API limits off', () => {
    const s = parseSettings({
      OPI_RATE_LIMIT_PER_MINUTE: '0',
      OPI_MAX_QUEUE_DEPTH: '0',
      OPI_KUBE_TIMEOUT_MS: '5000',
      OPI_KUBE_MAX_CONCURRENT_REQUESTS: '4',
    });
    expect(s.limits).toEqual({ ratePerMinute: 0, maxQueueDepth: 0 });
    expect(s.kube).toEqual({ timeoutMs: 5000, maxConcurrentRequests: 4 });
  });

  it.each([
    ['OPI_RATE_LIMIT_PER_MINUTE', '-1'],
    ['OPI_MAX_QUEUE_DEPTH', 'lots'],
    ['OPI_KUBE_TIMEOUT_MS', '0'],
    ['OPI_KUBE_MAX_CONCURRENT_REQUESTS', '0'],
  ])('refuse a bad %s, naming it', (name, value) => {
    expect(() => parseSettings({ [name]: value })).toThrow(SettingsError);
    expect(() => parseSettings({ [name]: value })).toThrow(name);
  });
});
