/**
 * The scheduling infos GET /apps lists: a Redis hash of one entry per LRP, each already in CC's format.
 *
 * Pre-rendered because GET /apps lists every LRP (17 MB at 100,000) and must answer in tens of ms: an
 * entry is rendered once, when its record changes, and a read is one HVALS that the API joins into its
 * body. CC's format is the contract's alone (`schedulingInfoJson`, which this module only calls; the API
 * wraps the entries with `schedulingInfosBody`).
 */
import { randomUUID } from 'node:crypto';
import type { Cluster, Redis } from 'ioredis';
import { schedulingInfoJson } from '@opi/contract';
import type { DesiredLrp } from '@opi/domain';
import type { Keys } from './keys.js';
import { LIST_STOPPED_WHILE_PRESENT, runScript } from './scripts.js';
import { replies } from './unavailable.js';

/** A desired LRP's entry, written with its record. */
export function schedulingInfoOf(lrp: DesiredLrp): string {
  return schedulingInfoJson(lrp.processGuid, lrp.guid, lrp.version, lrp.annotation);
}

/**
 * A stopped LRP's entry, listed while its workload still exists (listStoppedWhilePresent), so CC sees it
 * until it is gone.
 */
export function schedulingInfoOfStopped(rec: {
  processGuid: string;
  guid: string;
  version: string;
  annotation?: string | undefined;
}): string {
  return schedulingInfoJson(rec.processGuid, rec.guid, rec.version, rec.annotation ?? '');
}

/** Every entry, and the version of the hash they were read from (undefined: none written since a loss). */
export interface SchedulingInfoEntries {
  version: string | undefined;
  entries: string[];
}

export class SchedulingInfos {
  constructor(
    private readonly redis: Redis | Cluster,
    private readonly keys: Keys,
  ) {}

  /** Every entry and the version, read together (MULTI). */
  async read(): Promise<SchedulingInfoEntries> {
    const [version, values] = await replies(
      this.redis.multi().get(this.keys.schedulingInfosVersion).hvals(this.keys.schedulingInfos),
    );
    return {
      version: typeof version === 'string' ? version : undefined,
      entries: (values as string[] | undefined) ?? [],
    };
  }

  /** The current version: one GET. */
  async version(): Promise<string | undefined> {
    return (await this.redis.get(this.keys.schedulingInfosVersion)) ?? undefined;
  }

  /** See StateStore.listStoppedWhilePresent. */
  async listStoppedWhilePresent(entries: Map<string, string>, gone: readonly string[]): Promise<void> {
    const changes: [string, string][] = [...entries, ...gone.map((pg): [string, string] => [pg, ''])];
    for (let i = 0; i < changes.length; i += 500) {
      const chunk = changes.slice(i, i + 500);
      await runScript(
        this.redis,
        LIST_STOPPED_WHILE_PRESENT,
        [
          this.keys.schedulingInfos,
          this.keys.schedulingInfosVersion,
          ...chunk.map(([pg]) => this.keys.lrp(pg)),
        ],
        [randomUUID(), ...chunk.flat()],
      );
    }
  }
}
