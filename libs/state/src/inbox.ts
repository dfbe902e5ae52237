/**
 * The converge inbox: the script that records an LRP write also pushes the converge it asks for onto a
 * Redis list, and the workers move the list into the lrp queue (apps/worker/src/inbox-pump.ts). Why:
 * docs/decisions/0004-converge-inbox.md.
 */
import type { Cluster, Redis } from 'ioredis';

export interface InboxEntry {
  processGuid: string;
  /** What asked for the converge: `g<generation>` of the write. */
  cause: string;
  /** The write made the LRP desired from nothing: its Deployment most likely does not exist yet. */
  fresh: boolean;
}

/**
 * The entry's one definition, from which both its TypeScript (below) and its Lua (DESIRE, scripts.ts)
 * are built: these fields in this order, joined by SEPARATOR. The process guid comes last, as the one
 * field of free text.
 */
function entryFields<T>(cause: T, fresh: T, processGuid: T): T[] {
  return [cause, fresh, processGuid];
}
const SEPARATOR = ' ';
/** The cause is `g<generation>`; the converge job's id takes it. */
const CAUSE_PREFIX = 'g';
const FRESH = { yes: '1', no: '0' } as const;

/** The entry a write pushes. */
export function inboxEntry(processGuid: string, generation: number, fresh = false): string {
  return entryFields(`${CAUSE_PREFIX}${generation}`, fresh ? FRESH.yes : FRESH.no, processGuid).join(
    SEPARATOR,
  );
}

/**
 * The same entry as a Lua expression, for the scripts: `generation` and `processGuid` are Lua
 * expressions (a string each).
 */
export function inboxEntryLua(generation: string, processGuid: string, fresh: boolean): string {
  const literal = (s: string): string => `'${s}'`;
  return entryFields(
    `${literal(CAUSE_PREFIX)} .. ${generation}`,
    literal(fresh ? FRESH.yes : FRESH.no),
    processGuid,
  ).join(` .. ${literal(SEPARATOR)} .. `);
}

const ENTRY = new RegExp(
  `^${entryFields(`(?<cause>${CAUSE_PREFIX}\\d+)`, `(?<fresh>[${FRESH.no}${FRESH.yes}])`, '(?<processGuid>.+)').join(SEPARATOR)}$`,
  's',
);

/** An entry back into its parts; undefined for anything else (never written by this service). */
export function parseInboxEntry(raw: string): InboxEntry | undefined {
  const g = ENTRY.exec(raw)?.groups;
  if (!g?.['cause'] || !g['fresh'] || !g['processGuid']) return undefined;
  return { cause: g['cause'], fresh: g['fresh'] === FRESH.yes, processGuid: g['processGuid'] };
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
