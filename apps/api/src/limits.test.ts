import { describe, expect, it } from '@jest/globals';
import { ClientWindows } from './limits.js';

describe('ClientWindows', () => {
  it('counts each client on its own, within one window', () => {
    let t = 1000;
    const w = new ClientWindows(60_000, () => t);
    expect(w.hit('a')).toEqual({ count: 1, resetInMs: 60_000 });
    expect(w.hit('a').count).toBe(2);
    expect(w.hit('b').count).toBe(1);
    t += 59_999;
    expect(w.hit('a')).toEqual({ count: 3, resetInMs: 1 });
  });

  it('starts every count again when the window ends, the next window from that moment', () => {
    let t = 0;
    const w = new ClientWindows(60_000, () => t);
    for (let i = 0; i < 5; i++) w.hit('a');
    t = 60_000;
    expect(w.hit('a')).toEqual({ count: 1, resetInMs: 60_000 });
    // After a quiet spell of several windows, still a whole window.
    t = 1_000_000;
    expect(w.hit('b')).toEqual({ count: 1, resetInMs: 60_000 });
    expect(w.hit('a').count).toBe(1);
  });
});
