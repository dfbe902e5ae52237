import { describe, expect, it } from '@jest/globals';
import { compactNanos, nanosString, unixNanos, unixSeconds } from './time.js';

describe('unixNanos / unixSeconds', () => {
  it.each<[string | null | undefined, bigint | undefined, number | undefined]>([
    ['2020-05-11T15:52:25Z', 1589212345_000_000_000n, 1589212345],
    ['2020-05-11T15:52:25.123456Z', 1589212345_123_456_000n, 1589212345],
    ['2020-05-11T15:52:25.123456789Z', 1589212345_123_456_789n, 1589212345],
    ['2020-05-11T17:52:25+02:00', 1589212345_000_000_000n, 1589212345],
    ['1970-01-01T00:00:00Z', 0n, 0],
    ['2020-05-11 15:52:25Z', undefined, undefined],
    ['2020-13-45T99:99:99Z', undefined, undefined],
    ['', undefined, undefined],
    [null, undefined, undefined],
    [undefined, undefined, undefined],
  ])('%j → %s ns, %s s', (time, ns, s) => {
    expect(unixNanos(time)).toBe(ns);
    expect(unixSeconds(time)).toBe(s);
  });
});

describe('compactNanos / nanosString', () => {
  it.each<[bigint, number | string, string]>([
    [1589212345_000_000_000n, 1589212345, '1589212345000000000'],
    [0n, 0, '0'],
    [1589212345_123_456_789n, '1589212345123456789', '1589212345123456789'],
    [4102444800_000_000_000n, 4102444800, '4102444800000000000'],
  ])('%s ns', (ns, compact, string) => {
    expect(compactNanos(ns)).toBe(compact);
    expect(nanosString(compactNanos(ns))).toBe(string);
  });
});
