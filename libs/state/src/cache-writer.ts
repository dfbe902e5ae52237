/**
 * Fenced writes of the cluster cache (instances, sync facts, watch status) by the one leader that runs the
 * reflectors.
 *
 * Every write carries the leader's fencing token (the Lease's transitions when it took the Lease) and is a
 * script that refuses a token below the highest one seen (`cacheFence`), so a leader that was deposed
 * while frozen or cut off cannot overwrite its successor's cache with stale state, however late its
 * writes land. A write also requires the epoch its writer set when it claimed the cache (`cacheEpoch`):
 * after Redis lost its data (a flush, a restart without persistence) both keys are gone, and writes are
 * refused until the leader claims again and writes the whole cache anew, rather than leaving readers a
 * cache holding only the changes since the loss.
 *
 * Refusals are exceptions, not return values, so they cannot be overlooked:
 * - `FencedOffError`: a newer leader wrote; this one must stop writing for good (its term is over).
 * - `CacheEpochError`: the cache was lost (or claimed again under the same token); claim again, then
 *   write a full snapshot.
 *
 * Limit: the fence lives in the same Redis, so a flush loses it too; until the new leader claims again,
 * a deposed leader that claims first could write once more (its elector tells it within the renew
 * deadline that it no longer leads, and the next claim by the leader refuses it for good).
 */
import { randomUUID } from 'node:crypto';
import type { Cluster, Redis } from 'ioredis';
import { type Keys, keys } from './keys.js';
import { CACHE_CLAIM, CACHE_COMMIT_SNAPSHOT, CACHE_HASH_WRITE, runScript } from './scripts.js';
import { replies, storeClient } from './unavailable.js';

/** A newer leader (a higher token) has written the cache: this writer's term is over. */
export class FencedOffError extends Error {
  constructor(
    readonly token: number,
    /** The fence found, when the refusal said (claims do). */
    readonly fence?: number,
  ) {
    super(
      `cache write with fencing token ${token} refused: a newer leader wrote${fence === undefined ? '' : ` (fence ${fence})`}`,
    );
    this.name = 'FencedOffError';
  }
}

/** The cache's epoch is not this writer's: Redis lost its data, or the cache was claimed again since. */
export class CacheEpochError extends Error {
  constructor(readonly token: number) {
    super(
      `cache write with fencing token ${token} refused: the cache epoch changed (Redis lost its data or it was claimed again); claim and write a full snapshot`,
    );
    this.name = 'CacheEpochError';
  }
}

/** Entries per script call: keeps each call's arguments well within Lua's limits and each call short. */
const WRITE_CHUNK = 500;
/** Entries per HSET while a snapshot is written. */
const SNAPSHOT_CHUNK = 1000;
/** A snapshot its writer abandoned (a crash) expires on its own; each chunk written extends it. */
const SNAPSHOT_TTL_MS = 15 * 60_000;

function checkToken(token: number): void {
  if (!Number.isSafeInteger(token) || token < 0) throw new RangeError(`bad fencing token ${token}`);
}

export class CacheWriter {
  readonly keys: Keys;
  private epoch: string | undefined;

  private readonly redis: Redis | Cluster;

  /** A Cluster works as well: every key of one prefix shares its hash tag (see keys.ts). */
  constructor(redis: Redis | Cluster, prefix: string) {
    this.redis = storeClient(redis);
    this.keys = keys(prefix);
  }

  /**
   * Claims the cache for the term of `token`, at takeover and after a CacheEpochError: raises the fence
   * so no older leader writes any more. Answers the epoch and whether it is new (the token is higher than
   * any before, or Redis lost the previous epoch); with a new epoch the cache holds whatever earlier
   * leaders left, so write a full snapshot. Throws FencedOffError when a newer leader has claimed it
   * (e.g. after the Lease was deleted and re-created, which restarts its transitions at 0: the fence key
   * must then be deleted by hand).
   */
  async claim(token: number): Promise<{ epoch: string; fresh: boolean }> {
    checkToken(token);
    const proposed = randomUUID();
    const [ok, value] = (await runScript(
      this.redis,
      CACHE_CLAIM,
      [this.keys.cacheFence, this.keys.cacheEpoch],
      [token, proposed],
    )) as [number, string];
    if (ok !== 1) throw new FencedOffError(token, Number(value));
    this.epoch = value;
    return { epoch: value, fresh: value === proposed };
  }

  /** Whether the cache still holds this writer's epoch (one GET): false after Redis lost its data. */
  async epochPresent(): Promise<boolean> {
    if (this.epoch === undefined) return false;
    return (await this.redis.get(this.keys.cacheEpoch)) === this.epoch;
  }

  /** The highest token that has written (or claimed) the cache, if any. */
  async fence(): Promise<number | undefined> {
    const v = await this.redis.get(this.keys.cacheFence);
    return v === null ? undefined : Number(v);
  }

  /** Sets instances entries (process guid → opaque entry). */
  async putInstances(token: number, entries: readonly (readonly [string, string])[]): Promise<void> {
    for (let i = 0; i < entries.length; i += WRITE_CHUNK) {
      const chunk = entries.slice(i, i + WRITE_CHUNK).flat();
      await this.hashWrite(token, this.keys.instances, 'set', chunk);
    }
  }

  /** Removes instances entries. */
  async deleteInstances(token: number, processGuids: readonly string[]): Promise<void> {
    for (let i = 0; i < processGuids.length; i += WRITE_CHUNK) {
      await this.hashWrite(token, this.keys.instances, 'del', processGuids.slice(i, i + WRITE_CHUNK));
    }
  }

  /** Sets fields of the cache facts hash (`syncedAt`, … as StateStore.cacheMeta reads them). */
  async writeMeta(token: number, fields: Readonly<Record<string, string>>): Promise<void> {
    await this.hashWrite(token, this.keys.cacheMeta, 'set', Object.entries(fields).flat());
  }

  /** Sets fields of the watch status hash (per kind: resourceVersion, last event, …): also a heartbeat. */
  async writeWatchStatus(token: number, fields: Readonly<Record<string, string>>): Promise<void> {
    await this.hashWrite(token, this.keys.watchStatus, 'set', Object.entries(fields).flat());
  }

  /**
   * A full replacement of the instances hash: entries go into a snapshot key of its own (unfenced, it is
   * invisible), and a fenced commit renames it over the hash. Readers see the old cache or the new one.
   */
  snapshot(token: number): FencedSnapshot {
    checkToken(token);
    return new FencedSnapshot(this.redis, this.keys, token, () => this.requireEpoch());
  }

  private requireEpoch(): string {
    if (this.epoch === undefined) throw new Error('CacheWriter: claim the cache before writing it');
    return this.epoch;
  }

  private async hashWrite(token: number, key: string, op: 'set' | 'del', args: string[]): Promise<void> {
    checkToken(token);
    const epoch = this.requireEpoch();
    if (args.length === 0) return;
    const r = await runScript(
      this.redis,
      CACHE_HASH_WRITE,
      [this.keys.cacheFence, this.keys.cacheEpoch, key],
      [token, epoch, op, ...args],
    );
    refused(r, token);
  }
}

/** Throws for a script's refusal (0: fenced off, -1: epoch changed). */
function refused(r: unknown, token: number): void {
  if (r === 0) throw new FencedOffError(token);
  if (r === -1) throw new CacheEpochError(token);
  if (r !== 1) throw new Error(`unexpected answer from a cache script: ${String(r)}`);
}

/** One snapshot of the instances hash being written (see CacheWriter.snapshot). */
export class FencedSnapshot {
  private readonly key: string;
  private chunk: string[] = [];
  private written = 0;
  /** Fields the snapshot key gained (HSET's answers): the commit checks the key still holds them all. */
  private fields = 0;

  constructor(
    private readonly redis: Redis | Cluster,
    private readonly keys: Keys,
    private readonly token: number,
    private readonly epoch: () => string,
  ) {
    this.key = keys.instancesNext(randomUUID());
  }

  /** Entries written so far (including those not yet sent). */
  get size(): number {
    return this.written + this.chunk.length / 2;
  }

  async add(processGuid: string, entry: string): Promise<void> {
    this.chunk.push(processGuid, entry);
    if (this.chunk.length >= 2 * SNAPSHOT_CHUNK) await this.flush();
  }

  private async flush(): Promise<void> {
    if (this.chunk.length === 0) return;
    const fields = this.chunk;
    this.chunk = [];
    const [added] = await replies(
      this.redis
        .multi()
        .hset(this.key, ...fields)
        .pexpire(this.key, SNAPSHOT_TTL_MS),
    );
    this.written += fields.length / 2;
    this.fields += Number(added ?? 0);
  }

  /**
   * Makes this snapshot the instances hash (an empty one empties it) and sets the meta fields, if the
   * token is still current. On a refusal (FencedOffError, CacheEpochError) the snapshot is dropped.
   */
  async commit(meta: Readonly<Record<string, string>> = {}): Promise<void> {
    const epoch = this.epoch();
    await this.flush();
    const r = await runScript(
      this.redis,
      CACHE_COMMIT_SNAPSHOT,
      [this.keys.cacheFence, this.keys.cacheEpoch, this.keys.instances, this.key, this.keys.cacheMeta],
      [this.token, epoch, this.written > 0 ? String(this.fields) : '0', ...Object.entries(meta).flat()],
    );
    if (r === -2) {
      await this.abandon();
      throw new Error('instances snapshot expired before its commit');
    }
    try {
      refused(r, this.token);
    } catch (err) {
      await this.abandon();
      throw err;
    }
  }

  /** Drops what was written. */
  async abandon(): Promise<void> {
    this.chunk = [];
    await this.redis.del(this.key);
  }
}
