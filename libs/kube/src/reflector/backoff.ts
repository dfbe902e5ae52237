/**
 * Exponential back-off with jitter, as client-go's reflector uses: 0.8 s doubling up to 30 s, each delay
 * multiplied by a random factor in [1, 1 + jitter) so that many clients failing together spread out.
 * The cap applies before the jitter (as client-go's `wait.Backoff`), so jitter survives at the cap.
 */
export interface BackoffOptions {
  /** The first delay (default 800 ms). */
  initialMs?: number;
  /** The largest delay before jitter (default 30 s). */
  maxMs?: number;
  /** Growth per failure (default 2). */
  factor?: number;
  /** Each delay is multiplied by [1, 1 + jitter) (default 0.5; 0: no jitter). */
  jitter?: number;
}

export const DEFAULT_BACKOFF: Required<BackoffOptions> = {
  initialMs: 800,
  maxMs: 30_000,
  factor: 2,
  jitter: 0.5,
};

export class Backoff {
  private readonly options: Required<BackoffOptions>;
  private failures = 0;

  constructor(
    options: BackoffOptions = {},
    private readonly random: () => number = Math.random,
  ) {
    this.options = { ...DEFAULT_BACKOFF, ...options };
    const { initialMs, maxMs, factor, jitter } = this.options;
    if (!(initialMs > 0 && maxMs >= initialMs && factor >= 1 && jitter >= 0)) {
      throw new RangeError('backoff needs 0 < initialMs ≤ maxMs, factor ≥ 1 and jitter ≥ 0');
    }
  }

  /** Failures since the last reset. */
  get attempts(): number {
    return this.failures;
  }

  /** The delay before the next attempt, counting one more failure. */
  next(): number {
    const { initialMs, maxMs, factor, jitter } = this.options;
    // factor ** failures reaches Infinity after a long outage; the cap still holds.
    const base = Math.min(maxMs, initialMs * factor ** this.failures);
    this.failures++;
    return base * (1 + jitter * this.random());
  }

  reset(): void {
    this.failures = 0;
  }
}
