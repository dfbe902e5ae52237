/**
 * The converge inbox: how an LRP write asks for its converge.
 *
 * The script that records a desire, an update or a stop also pushes one entry onto a Redis list, in the
 * same atomic step; the workers move entries into the lrp queue in batches (apps/worker's inbox pump).
 * Why not BullMQ's `add` on the request path, as before:
 * - **The API's CPU.** A BullMQ add (job object, msgpackr, its Lua script, the de-duplication) was about
 *   a fifth of the API's CPU per desire, and the API is bound by its own CPU under CC's bursts. An
 *   RPUSH inside the script that already runs costs next to nothing; the workers add with `addBulk`,
 *   cheaper per job, and there can be as many of them as the load needs.
 * - **No lost enqueue.** Record and request of its converge are one step: there is no longer a window
 *   where the record is written and the enqueue fails (the sync used to be the only repair).
 *
 * An entry is `<cause> <fresh 0|1> <process guid>` (the guid last: it is the one part of free text).
 * The cause is `g<generation>`, so the job id is the one the API's add used to make. A worker that dies
 * between taking entries and adding them loses them; the sync then finds those LRPs unconverged and
 * enqueues them itself, as it does for any lost job.
 */
import type { Cluster, Redis } from 'ioredis';

export interface InboxEntry {
  processGuid: string;
  /** What asked for the converge: `g<generation>` of the write. */
  cause: string;
  /** The write made the LRP desired from nothing: its Deployment most likely does not exist yet. */
  fresh: boolean;
}

/** The entry a write pushes; DESIRE builds the same in Lua (`g<generation> 1 <process guid>`). */
export function inboxEntry(processGuid: string, generation: number, fresh = false): string {
  return `g${generation} ${fresh ? 1 : 0} ${processGuid}`;
}

/** An entry back into its parts; undefined for anything else (never written by this service). */
export function parseInboxEntry(raw: string): InboxEntry | undefined {
  const m = /^(g\d+) ([01]) (.+)$/s.exec(raw);
  if (!m?.[1] || !m[2] || !m[3]) return undefined;
  return { cause: m[1], fresh: m[2] === '1', processGuid: m[3] };
}

/** Taking entries from the inbox, for the workers (a StateStore's `inbox`). */
export class ConvergeInbox {
  constructor(
    private readonly redis: Redis | Cluster,
    readonly key: string,
  ) {}

  /**
   * Up to `max` entries, waiting up to `waitSeconds` for the first one (on `blocking`, a connection of
   * its own: a blocked connection serves nothing else). Empty when none came. The first entry wakes
   * the wait at once, and what arrived meanwhile comes with it, so a burst moves in batches.
   */
  async take(blocking: Redis | Cluster, max: number, waitSeconds: number): Promise<string[]> {
    const first = await blocking.blpop(this.key, waitSeconds);
    if (!first) return [];
    const more = max > 1 ? await this.redis.lpop(this.key, max - 1) : null;
    return [first[1], ...(more ?? [])];
  }

  /** Entries a failed add took, back at the head, in their order. */
  async putBack(entries: readonly string[]): Promise<void> {
    if (entries.length) await this.redis.lpush(this.key, ...[...entries].reverse());
  }

  /** Entries waiting to be moved into the queue (part of the lrp queue's backlog). */
  length(): Promise<number> {
    return this.redis.llen(this.key);
  }
}
