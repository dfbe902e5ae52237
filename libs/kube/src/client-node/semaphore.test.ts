import { describe, expect, it } from '@jest/globals';
import { Semaphore } from './semaphore.js';

describe('Semaphore', () => {
  it('admits up to the limit and hands slots over in arrival order', async () => {
    const s = new Semaphore(2);
    const r1 = await s.acquire();
    const r2 = await s.acquire();
    const order: number[] = [];
    const w3 = s.acquire().then((r) => (order.push(3), r));
    const w4 = s.acquire().then((r) => (order.push(4), r));
    await Promise.resolve();
    expect(s.inUse).toBe(2);
    expect(s.queued).toBe(2);
    r1();
    r1(); // a second release is ignored
    const r3 = await w3;
    expect(order).toEqual([3]);
    expect(s.inUse).toBe(2);
    r2();
    const r4 = await w4;
    expect(order).toEqual([3, 4]);
    r3();
    r4();
    expect(s.inUse).toBe(0);
    expect(s.queued).toBe(0);
  });

  it('refuses a limit below one', () => {
    expect(() => new Semaphore(0)).toThrow(RangeError);
  });
});
