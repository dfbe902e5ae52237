/**
 * Moves the converge inbox into the lrp queue (docs/decisions/0004-converge-inbox.md): every worker
 * process runs one pump, blocked on the list, and adds what one take brings in one addBulk.
 *
 * A failed add puts its entries back at the head and waits before the next try. An entry the pump cannot
 * read, or whose process guid the queue's schema refuses, is dropped with a warning: nothing of this
 * service writes one, and the sync converges whatever LRP it might have named.
 */
import type { Logger } from '@opi/logging';
import { type ConvergeItem, JOBS, type JobProducer, type RedisClient } from '@opi/queue';
import { type ConvergeInbox, parseInboxEntry } from '@opi/state';

export interface InboxPumpOptions {
  /** Entries moved in one addBulk at most. */
  batch: number;
  /** How long one blocking take waits for an entry; also how long a graceful stop may wait for it. */
  waitSeconds: number;
  /** Pause after a failed take or add, before the next try. */
  retryMs: number;
}

export const DEFAULT_INBOX_PUMP: InboxPumpOptions = { batch: 500, waitSeconds: 1, retryMs: 1000 };

export interface InboxPump {
  /** Entries moved into the queue so far. */
  moved(): number;
  /** Stops after the take in flight (its entries are added first); gives up on it after `timeoutMs`. */
  close(timeoutMs?: number): Promise<void>;
}

export interface InboxPumpDeps {
  inbox: ConvergeInbox;
  /** A connection of the pump's own: BLPOP blocks it. Closed by the pump's close. */
  blocking: RedisClient;
  producer: JobProducer;
  logger: Logger;
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

export function startInboxPump(deps: InboxPumpDeps, options: Partial<InboxPumpOptions> = {}): InboxPump {
  const { batch, waitSeconds, retryMs } = { ...DEFAULT_INBOX_PUMP, ...options };
  const { inbox, blocking, producer, logger } = deps;
  let stopping = false;
  let moved = 0;

  const moveOnce = async (): Promise<void> => {
    const taken = await inbox.take(blocking, batch, waitSeconds);
    if (!taken.length) return;
    const items: ConvergeItem[] = [];
    for (const raw of taken) {
      const entry = parseInboxEntry(raw);
      // Checked one by one: a payload the queue's schema refuses would fail the whole batch's add
      // every time (a permanent error), holding up every entry behind it.
      if (entry && JOBS.convergeLrp.schema.safeParse({ processGuid: entry.processGuid }).success) {
        items.push(entry);
      } else {
        logger.warn({ entry: raw.slice(0, 200) }, 'converge inbox: unreadable entry dropped');
      }
    }
    try {
      await producer.convergeLrps(items);
    } catch (err) {
      // Not lost while Redis answers: back at the head for the next take (the ids make a re-add one job).
      await inbox.putBack(taken).catch((e: unknown) => {
        logger.warn(
          { err: e, entries: taken.length },
          'converge inbox: entries lost; the sync converges them',
        );
      });
      throw err;
    }
    moved += items.length;
  };

  const loop = (async () => {
    while (!stopping) {
      try {
        await moveOnce();
      } catch (err) {
        if (stopping) break;
        logger.warn({ err }, 'converge inbox: move failed; trying again');
        await sleep(retryMs);
      }
    }
  })();

  return {
    moved: () => moved,
    close: async (timeoutMs = (waitSeconds + 5) * 1000) => {
      stopping = true;
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([loop, new Promise<void>((r) => (timer = setTimeout(r, timeoutMs)))]);
      clearTimeout(timer);
      blocking.disconnect();
      await loop;
    },
  };
}
