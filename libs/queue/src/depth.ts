/**
 * The backlog of a queue (waiting and delayed jobs) as the API's back-pressure reads it: cached, and
 * read again at most once per `maxAgeMs` per queue, whatever the request rate. A read is the same call
 * the metrics' `opi_queue_depth` makes (BullMQ's getJobCounts: one script, one round trip per queue),
 * and concurrent requests share a read in flight rather than each sending one.
 */
import { QUEUE_NAMES } from './jobs.js';

/** Anything that counts jobs by state, as BullMQ's Queue does (structural: the metrics use it too). */
export interface CountsSource<T extends string> {
  getJobCounts(...types: T[]): Promise<Record<string, number>>;
}

/** What the backlog reads. */
export type JobCountsSource = CountsSource<'waiting' | 'delayed'>;

/** Long enough that a burst of thousands of writes costs a handful of reads; short enough to react. */
export const DEFAULT_DEPTH_MAX_AGE_MS = 1000;

interface Entry {
  depth: number;
  readAt: number;
  pending: Promise<number> | undefined;
}

export class QueueBacklog {
  private readonly entries = new Map<string, Entry>();

  constructor(
    private readonly queues: Readonly<Record<string, JobCountsSource>>,
    private readonly maxAgeMs = DEFAULT_DEPTH_MAX_AGE_MS,
    private readonly now: () => number = Date.now,
  ) {}

  /** The depth read less than `maxAgeMs` ago, if there is one: no promise to wait for on the hot path. */
  fresh(queue: string): number | undefined {
    const entry = this.entries.get(queue);
    return entry && this.now() - entry.readAt < this.maxAgeMs ? entry.depth : undefined;
  }

  /**
   * Waiting + delayed jobs of `queue`, at most `maxAgeMs` old. When a read fails, the last value read
   * is returned if there is one (the failure is thrown otherwise).
   */
  async depth(queue: string): Promise<number> {
    const source = this.queues[queue];
    if (!source) throw new Error(`unknown queue ${queue}`);
    const known = this.fresh(queue);
    if (known !== undefined) return known;
    let entry = this.entries.get(queue);
    if (!entry) {
      entry = { depth: 0, readAt: -Infinity, pending: undefined };
      this.entries.set(queue, entry);
    }
    const e = entry;
    e.pending ??= source
      .getJobCounts('waiting', 'delayed')
      .then((counts) => {
        e.depth = (counts['waiting'] ?? 0) + (counts['delayed'] ?? 0);
        e.readAt = this.now();
        return e.depth;
      })
      .finally(() => {
        e.pending = undefined;
      });
    try {
      return await e.pending;
    } catch (err) {
      if (e.readAt > -Infinity) return e.depth;
      throw err;
    }
  }
}

/**
 * `queues` with the lrp queue's waiting count raised by the converge inbox's length: converges the API
 * asked for that no worker has moved into the queue yet are backlog too (for back-pressure and
 * `opi_queue_depth`), and pile up there when no worker runs.
 */
export function withConvergeInbox<T extends string>(
  queues: Readonly<Record<string, CountsSource<T>>>,
  inbox: { length(): Promise<number> },
): Record<string, CountsSource<T>> {
  const source = queues[QUEUE_NAMES.lrp];
  if (!source) return { ...queues };
  const counted: CountsSource<T> = {
    getJobCounts: async (...types) => {
      const [counts, waiting] = await Promise.all([source.getJobCounts(...types), inbox.length()]);
      return { ...counts, waiting: (counts['waiting'] ?? 0) + waiting };
    },
  };
  return { ...queues, [QUEUE_NAMES.lrp]: counted };
}
