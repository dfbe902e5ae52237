/**
 * A FIFO of at most `capacity` items that makes room by dropping the oldest: while Loggregator is away
 * the newest lines are the ones worth keeping, and memory stays bounded. A ring, so push and shift are O(1).
 */
export class BoundedQueue<T> {
  private readonly items: (T | undefined)[];
  private head = 0;
  private count = 0;

  constructor(readonly capacity: number) {
    if (!Number.isInteger(capacity) || capacity < 1) throw new RangeError('capacity must be ≥ 1');
    this.items = new Array<T | undefined>(capacity);
  }

  get length(): number {
    return this.count;
  }

  /** Adds at the tail; returns how many of the oldest were dropped to make room (0 or 1). */
  push(item: T): number {
    if (this.count === this.capacity) {
      this.items[this.head] = item;
      this.head = (this.head + 1) % this.capacity;
      return 1;
    }
    this.items[(this.head + this.count) % this.capacity] = item;
    this.count++;
    return 0;
  }

  /** Puts items back at the head, in order (a batch whose write failed); the oldest overflow is dropped. */
  unshiftAll(batch: readonly T[]): number {
    let dropped = 0;
    for (let i = batch.length - 1; i >= 0; i--) {
      if (this.count === this.capacity) {
        dropped += i + 1; // the older ones of the batch are the ones that no longer fit
        break;
      }
      this.head = (this.head - 1 + this.capacity) % this.capacity;
      this.items[this.head] = batch[i];
      this.count++;
    }
    return dropped;
  }

  /** Takes up to `max` items from the head. */
  take(max: number): T[] {
    const n = Math.min(max, this.count);
    const out = new Array<T>(n);
    for (let i = 0; i < n; i++) {
      out[i] = this.items[this.head] as T;
      this.items[this.head] = undefined;
      this.head = (this.head + 1) % this.capacity;
    }
    this.count -= n;
    return out;
  }
}
