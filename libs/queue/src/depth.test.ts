import { describe, expect, it } from '@jest/globals';
import { QueueBacklog } from './depth.js';

function source(counts: () => Record<string, number> | Error) {
  const calls: string[][] = [];
  return {
    calls,
    getJobCounts: (...types: string[]): Promise<Record<string, number>> => {
      calls.push(types);
      const c = counts();
      return c instanceof Error ? Promise.reject(c) : Promise.resolve(c);
    },
  };
}

describe('QueueBacklog', () => {
  it('counts waiting and delayed jobs, read once per maxAge whatever the number of requests', async () => {
    let now = 0;
    let waiting = 3;
    const lrp = source(() => ({ waiting, delayed: 2 }));
    const backlog = new QueueBacklog({ lrp }, 1000, () => now);
    expect(await Promise.all([backlog.depth('lrp'), backlog.depth('lrp'), backlog.depth('lrp')])).toEqual([
      5, 5, 5,
    ]);
    expect(lrp.calls).toEqual([['waiting', 'delayed']]);
    waiting = 10;
    now = 999;
    expect(await backlog.depth('lrp')).toBe(5);
    now = 1000;
    expect(await backlog.depth('lrp')).toBe(12);
    expect(lrp.calls).toHaveLength(2);
  });

  it('answers a fresh depth without a promise, and nothing once it is stale or before the first read', async () => {
    let now = 0;
    const lrp = source(() => ({ waiting: 4 }));
    const backlog = new QueueBacklog({ lrp }, 1000, () => now);
    expect(backlog.fresh('lrp')).toBeUndefined();
    await backlog.depth('lrp');
    now = 999;
    expect(backlog.fresh('lrp')).toBe(4);
    now = 1000;
    expect(backlog.fresh('lrp')).toBeUndefined();
    expect(lrp.calls).toHaveLength(1);
  });

  it('keeps the last value when a read fails, and throws when there is none', async () => {
    let now = 0;
    let fail = true;
    const task = source(() => (fail ? new Error('redis away') : { waiting: 7 }));
    const backlog = new QueueBacklog({ task }, 1000, () => now);
    await expect(backlog.depth('task')).rejects.toThrow('redis away');
    fail = false;
    expect(await backlog.depth('task')).toBe(7);
    fail = true;
    now = 5000;
    expect(await backlog.depth('task')).toBe(7);
    await expect(backlog.depth('nope')).rejects.toThrow(/unknown queue/);
  });
});
