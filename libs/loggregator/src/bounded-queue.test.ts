import { describe, expect, it } from '@jest/globals';
import { BoundedQueue } from './bounded-queue.js';

describe('BoundedQueue', () => {
  it('keeps order and drops the oldest when full, counting each drop', () => {
    const q = new BoundedQueue<number>(3);
    expect([1, 2, 3, 4, 5].map((n) => q.push(n))).toEqual([0, 0, 0, 1, 1]);
    expect(q.length).toBe(3);
    expect(q.take(10)).toEqual([3, 4, 5]);
    expect(q.length).toBe(0);
  });

  it('puts a failed batch back at the head, dropping its oldest when there is no room', () => {
    const q = new BoundedQueue<number>(4);
    [1, 2, 3, 4].forEach((n) => q.push(n));
    const batch = q.take(3);
    q.push(5);
    q.push(6);
    expect(q.unshiftAll(batch)).toBe(2); // room for one of the three: 3 goes back, 1 and 2 are dropped
    expect(q.take(10)).toEqual([3, 4, 5, 6]);
  });

  it('wraps around the ring', () => {
    const q = new BoundedQueue<number>(2);
    for (let n = 0; n < 7; n++) {
      q.push(n);
      if (n % 2 === 1) expect(q.take(1)).toEqual([n - 1]);
    }
    expect(q.take(5)).toEqual([5, 6]);
  });
});
