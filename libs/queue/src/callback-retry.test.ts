import { describe, expect, it } from '@jest/globals';
import type { MinimalJob } from 'bullmq';
import {
  CALLBACK_BACKOFF,
  type CallbackRetryPolicy,
  RetryWindowPassedError,
  callbackBackoffStrategy,
  callbackRetryDelay,
  formatMs,
  retryWindowPassed,
} from './callback-retry.js';

const policy: CallbackRetryPolicy = { firstDelayMs: 2000, maxDelayMs: 30_000, windowMs: 24 * 3_600_000 };
const t0 = 1_700_000_000_000;
const lowest = () => 0.999_999;
const highest = () => 0;

describe('callbackRetryDelay', () => {
  it('doubles from the first delay and stops at the cap, however many tries came before', () => {
    const at = (n: number) => callbackRetryDelay(policy, n, t0, t0 + 1000, highest);
    expect([1, 2, 3, 4, 5].map(at)).toEqual([2000, 4000, 8000, 16_000, 30_000]);
    expect(at(6)).toBe(30_000);
    // An hour of CC away is 120 tries at the cap: the next is still 30 s away, not an hour.
    expect(at(120)).toBe(30_000);
    expect(at(5000)).toBe(30_000);
  });

  it('draws each delay from [d/2, d]', () => {
    for (const n of [1, 3, 50]) {
      const d = Math.min(2000 * 2 ** (n - 1), 30_000);
      expect(callbackRetryDelay(policy, n, t0, t0, highest)).toBe(d);
      expect(callbackRetryDelay(policy, n, t0, t0, lowest)).toBe(Math.floor(d / 2 + 0.000_001 * d));
      for (let i = 0; i < 200; i++) {
        const delay = callbackRetryDelay(policy, n, t0, t0);
        expect(delay).toBeGreaterThanOrEqual(d / 2);
        expect(delay).toBeLessThanOrEqual(d);
      }
    }
  });

  it('never waits past the window: the last try falls on its end, and after it there is none (-1)', () => {
    const end = t0 + policy.windowMs;
    expect(callbackRetryDelay(policy, 2900, t0, end - 10_000, highest)).toBe(10_000);
    expect(callbackRetryDelay(policy, 2900, t0, end - 1, highest)).toBe(1);
    expect(callbackRetryDelay(policy, 2900, t0, end, highest)).toBe(-1);
    expect(callbackRetryDelay(policy, 2900, t0, end + 60_000, highest)).toBe(-1);
    expect(retryWindowPassed(policy, t0, end - 1)).toBe(false);
    expect(retryWindowPassed(policy, t0, end)).toBe(true);
  });

  it('keeps a cap below the first delay', () => {
    const tight = { ...policy, maxDelayMs: 500 };
    expect(callbackRetryDelay(tight, 1, t0, t0, highest)).toBe(500);
  });
});

describe('callbackBackoffStrategy', () => {
  const job = (timestamp: number) => ({ timestamp }) as MinimalJob;

  it('measures the window from the job timestamp (when the report was first enqueued)', async () => {
    const strategy = callbackBackoffStrategy(policy);
    const fresh = await strategy(3, CALLBACK_BACKOFF, new Error('CC unavailable'), job(Date.now()));
    expect(fresh).toBeGreaterThan(4000);
    expect(fresh).toBeLessThanOrEqual(8000);
    const old = job(Date.now() - policy.windowMs - 1);
    expect(await strategy(3, CALLBACK_BACKOFF, new Error('CC unavailable'), old)).toBe(-1);
  });

  it('gives no retry to a backoff type it does not know', async () => {
    expect(await callbackBackoffStrategy(policy)(1, 'other', undefined, job(Date.now()))).toBe(-1);
  });
});

describe('RetryWindowPassedError', () => {
  it('says the window, its start and the last error', () => {
    const err = new RetryWindowPassedError(policy, t0, 'CC unavailable: connect ECONNREFUSED');
    expect(err.message).toBe(
      'not delivered within its retry window (24 h from 2023-11-14T22:13:20.000Z); last error: CC unavailable: connect ECONNREFUSED',
    );
    expect([formatMs(1_800_000), formatMs(1500), formatMs(2000)]).toEqual(['30 min', '1500 ms', '2 s']);
  });
});
