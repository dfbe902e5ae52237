/**
 * The LRPs' desired state and the cluster cache, in Redis.
 *
 * Desired state: one JSON record per LRP (its spec, or a tombstone after a stop), each change a
 * compare-and-set stamped with a generation from one counter, so concurrent API replicas never lose one
 * another's writes. A change also writes the LRP's scheduling info (scheduling-infos.ts) and the
 * converge it asks for (inbox.ts) in the same script.
 *
 * Cache: read here, written by the one cache writer (cache-writer.ts), which swaps in whole snapshots,
 * so readers see one complete snapshot or the previous one, never a mix.
 */
import { randomUUID } from 'node:crypto';
import type { Cluster, Redis } from 'ioredis';
import type { DesiredLrp, LrpRecord, Route } from '@opi/domain';
import { ConvergeInbox, inboxEntry } from './inbox.js';
import { type Keys, keys } from './keys.js';
import { CLEAR_REFUSAL, type DesireRefusal, RECORD_REFUSAL, parseRefusal, refusalValue } from './refusals.js';
import { type SchedulingInfoEntries, SchedulingInfos, schedulingInfoOf } from './scheduling-infos.js';
import {
  CAS_RECORD,
  DESIRE,
  EXPIRE_IF_UNCHANGED,
  KEEP_LATER,
  NEXT_GENERATION,
  RECORD_SUMMARIES,
  runScript,
} from './scripts.js';
import { type CachedInstances, assignmentsOf, parseInstancesEntry } from './instances-cache.js';
import { tryLock } from './sync-lock.js';
import { replies, storeClient } from './unavailable.js';

export interface CacheMeta {
  syncedAt: number;
  durationMs: number;
  deployments: number;
  statefulsets: number;
  pods: number;
}

/**
 * A record summed up for the sync: a desired LRP's generation, or a stop's tombstone. `processGuid` is
 * the very string the map is keyed by, so the sync can name an LRP without a copy per listed object.
 */
export type RecordSummary =
  { state: 'desired'; generation: number; processGuid: string } | Extract<LrpRecord, { state: 'stopped' }>;

export type UpdateFields = {
  instances: number;
  annotation: string;
  image?: string | undefined;
  /** CC's current routes, when the update carries them. */
  routes?: Route[] | undefined;
};

/** How long a confirmed tombstone is kept, so a stale listing cannot mistake its workload for a lost one. */
export const TOMBSTONE_TTL_SECONDS = 3600;

export class StateStore {
  readonly keys: Keys;
  /** The converges this store's writes ask for (see inbox.ts). */
  readonly inbox: ConvergeInbox;
  private readonly redis: Redis | Cluster;
  private readonly listing: SchedulingInfos;

  /** A Cluster works as well: every key of one prefix shares its hash tag (see keys.ts). */
  constructor(redis: Redis | Cluster, prefix: string) {
    this.redis = storeClient(redis);
    this.keys = keys(prefix);
    this.inbox = new ConvergeInbox(this.redis, this.keys.inbox);
    this.listing = new SchedulingInfos(this.redis, this.keys);
  }

  /**
   * Replaces the record `expected` (its text, '' = none) by `next`, setting, deleting or keeping its
   * scheduling info, and pushing `converge` (an inbox entry) when given; false if the record changed.
   */
  private async cas(
    processGuid: string,
    expected: string,
    next: LrpRecord,
    schedulingInfo: { set: string } | 'del' | 'keep',
    converge = '',
  ): Promise<boolean> {
    const [op, info] =
      typeof schedulingInfo === 'string' ? [schedulingInfo, ''] : ['set', schedulingInfo.set];
    const r = await runScript(
      this.redis,
      CAS_RECORD,
      [
        this.keys.lrp(processGuid),
        this.keys.lrps,
        this.keys.schedulingInfos,
        this.keys.schedulingInfosVersion,
        this.keys.inbox,
      ],
      [expected, JSON.stringify(next), processGuid, op, info, randomUUID(), converge],
    );
    return r === 1;
  }

  private async nextGeneration(): Promise<number> {
    const floor = String(Date.now() * 1000);
    return Number(await runScript(this.redis, NEXT_GENERATION, [this.keys.generation], [floor]));
  }

  /** The record's text as stored ('' = none): what a compare-and-set expects. */
  private async recordText(processGuid: string): Promise<string> {
    return (await this.redis.get(this.keys.lrp(processGuid))) ?? '';
  }

  async get(processGuid: string): Promise<LrpRecord | undefined> {
    const text = await this.recordText(processGuid);
    return text ? (JSON.parse(text) as LrpRecord) : undefined;
  }

  /**
   * Records a desire. An LRP that is already desired is left as it is (CC's re-desire is a no-op). A
   * recorded one asks for its converge in the same step (see inbox.ts); so do update and stop.
   */
  async desire(lrp: DesiredLrp): Promise<{ changed: boolean; generation: number }> {
    const [changed, generation] = (await runScript(
      this.redis,
      DESIRE,
      [
        this.keys.lrp(lrp.processGuid),
        this.keys.lrps,
        this.keys.schedulingInfos,
        this.keys.generation,
        this.keys.schedulingInfosVersion,
        this.keys.inbox,
      ],
      [JSON.stringify(lrp), lrp.processGuid, schedulingInfoOf(lrp), String(Date.now() * 1000), randomUUID()],
    )) as [number, string];
    return { changed: changed === 1, generation: Number(generation) };
  }

  /** Updates instances, annotation and (when given and not empty) image; undefined if not desired. */
  async update(
    processGuid: string,
    fields: UpdateFields,
  ): Promise<{ generation: number; lrp: DesiredLrp } | undefined> {
    for (;;) {
      const text = await this.recordText(processGuid);
      if (!text) return undefined;
      const cur = JSON.parse(text) as LrpRecord;
      if (cur.state !== 'desired') return undefined;
      const lrp: DesiredLrp = {
        ...cur.lrp,
        instances: fields.instances,
        annotation: fields.annotation,
        ...(fields.image ? { image: fields.image } : {}),
        ...(fields.routes ? { routes: fields.routes } : {}),
      };
      const generation = await this.nextGeneration();
      const next: LrpRecord = { state: 'desired', lrp, generation };
      const converge = inboxEntry(processGuid, generation);
      if (await this.cas(processGuid, text, next, { set: schedulingInfoOf(lrp) }, converge)) {
        return { generation, lrp };
      }
    }
  }

  /** Records a stop as a tombstone (also for an LRP never seen: its workload may exist all the same). */
  async stop(
    processGuid: string,
    guid: string,
    version: string,
  ): Promise<{ generation: number; existed: boolean }> {
    for (;;) {
      const text = await this.recordText(processGuid);
      const cur = text ? (JSON.parse(text) as LrpRecord) : undefined;
      const generation = await this.nextGeneration();
      const namespace = cur?.state === 'desired' ? cur.lrp.namespace : cur?.namespace;
      const names =
        cur?.state === 'desired'
          ? { appName: cur.lrp.appName, spaceName: cur.lrp.spaceName }
          : cur?.appName !== undefined
            ? { appName: cur.appName, spaceName: cur.spaceName ?? '' }
            : {};
      const annotation = cur?.state === 'desired' ? cur.lrp.annotation : cur?.annotation;
      const tombstone: LrpRecord = {
        state: 'stopped',
        processGuid,
        guid,
        version,
        generation,
        ...(namespace ? { namespace } : {}),
        ...names,
        ...(annotation !== undefined ? { annotation } : {}),
      };
      if (await this.cas(processGuid, text, tombstone, 'del', inboxEntry(processGuid, generation))) {
        return { generation, existed: cur?.state === 'desired' };
      }
    }
  }

  /** Rebuilds a record from the cluster, only where Redis has none (after a flush). */
  async adopt(lrp: DesiredLrp): Promise<boolean> {
    const generation = await this.nextGeneration();
    const record: LrpRecord = { state: 'desired', lrp, generation };
    return this.cas(lrp.processGuid, '', record, { set: schedulingInfoOf(lrp) });
  }

  /** Called once a stopped LRP's workload is gone: the tombstone then expires, and a refusal goes. */
  async confirmStopped(processGuid: string, generation: number): Promise<void> {
    await this.clearRefusal(processGuid, generation);
    const text = await this.recordText(processGuid);
    if (!text) return;
    const cur = JSON.parse(text) as LrpRecord;
    if (cur.state !== 'stopped' || cur.generation !== generation) return;
    await runScript(
      this.redis,
      EXPIRE_IF_UNCHANGED,
      [this.keys.lrp(processGuid)],
      [text, String(TOMBSTONE_TTL_SECONDS)],
    );
  }

  /**
   * Every LRP's scheduling info, already in CC's format, with the version they were read at (see
   * scheduling-infos.ts): the API joins them into GET /apps' body.
   */
  async schedulingInfos(): Promise<SchedulingInfoEntries> {
    return this.listing.read();
  }

  /** The scheduling infos' current version (see schedulingInfos): one GET. */
  async schedulingInfosVersion(): Promise<string | undefined> {
    return this.listing.version();
  }

  /**
   * What the sync needs of every record: its state and generation (a stop's tombstone whole, it is
   * small), not the desired LRPs. A chunk at a time (SSCAN, then RECORD_SUMMARIES, which leaves a
   * desired record's text in Redis): at 100,000 LRPs it never holds them all, nor all their process
   * guids. SSCAN may return a member twice (when the set is resized meanwhile), so a caller takes a
   * repeat as a no-op. Members whose record expired are dropped from the set.
   */
  async *recordSummaries(chunkSize = 1000): AsyncGenerator<RecordSummary[]> {
    const gone: string[] = [];
    let cursor = '0';
    do {
      const [next, chunk] = await this.redis.sscan(this.keys.lrps, cursor, 'COUNT', chunkSize);
      cursor = next;
      if (chunk.length === 0) continue;
      const values = (await runScript(
        this.redis,
        RECORD_SUMMARIES,
        chunk.map((g) => this.keys.lrp(g)),
        [],
      )) as (number | string)[];
      const summaries: RecordSummary[] = [];
      chunk.forEach((g, j) => {
        const v = values[j];
        if (typeof v === 'number') {
          summaries.push({ state: 'desired', generation: v, processGuid: g });
          return;
        }
        if (!v) {
          gone.push(g);
          return;
        }
        const rec = JSON.parse(v) as LrpRecord;
        summaries.push(
          rec.state === 'desired'
            ? { state: 'desired', generation: rec.generation, processGuid: g }
            : { ...rec, processGuid: g },
        );
      });
      yield summaries;
    } while (cursor !== '0');
    if (gone.length) await this.redis.srem(this.keys.lrps, ...gone);
  }

  /**
   * Keeps stopped LRPs whose workload still exists in GET /apps (`entries`: process guid → scheduling
   * info), so CC sees them until they are gone, and drops those whose workload is `gone`. An LRP desired
   * again since the sync read the records is left alone, so a stale sync can neither hide it nor put
   * back an old annotation.
   */
  async listStoppedWhilePresent(entries: Map<string, string>, gone: readonly string[]): Promise<void> {
    await this.listing.listStoppedWhilePresent(entries, gone);
  }

  async cachedInstances(processGuid: string): Promise<CachedInstances | undefined> {
    const v = await this.redis.hget(this.keys.instances, processGuid);
    return v ? parseInstancesEntry(v) : undefined;
  }

  /** The cached instance assignments of these LRPs (one round trip), for the writer to keep indexes stable. */
  async cachedAssignments(processGuids: readonly string[]): Promise<Map<string, number>[]> {
    if (processGuids.length === 0) return [];
    const values = await this.redis.hmget(this.keys.instances, ...processGuids);
    return values.map(assignmentsOf);
  }

  /**
   * The record, the cached instances, when the cache was synced (ms, if ever) and the refusal of the
   * record's desire if it still stands (refusals.ts), in one round trip.
   */
  async lrpWithInstances(processGuid: string): Promise<{
    record?: LrpRecord;
    cached?: CachedInstances;
    syncedAt?: number;
    refusal?: DesireRefusal;
  }> {
    const [rec, inst, synced, refused] = await replies(
      this.redis
        .pipeline()
        .get(this.keys.lrp(processGuid))
        .hget(this.keys.instances, processGuid)
        .hget(this.keys.cacheMeta, 'syncedAt')
        .get(this.keys.refusal(processGuid)),
    );
    const record = typeof rec === 'string' ? (JSON.parse(rec) as LrpRecord) : undefined;
    const refusal = parseRefusal(typeof refused === 'string' ? refused : undefined);
    return {
      ...(record ? { record } : {}),
      ...(typeof inst === 'string' ? { cached: parseInstancesEntry(inst) } : {}),
      ...(typeof synced === 'string' ? { syncedAt: Number(synced) } : {}),
      // A refusal of another generation is not this spec's: an update or a new desire was recorded since.
      ...(refusal && record?.generation === refusal.generation ? { refusal } : {}),
    };
  }

  /**
   * Records that the cluster refused the desire of `refusal.generation` for good, unless a refusal of a
   * newer generation is already there; false when it was.
   */
  async recordRefusal(processGuid: string, refusal: DesireRefusal): Promise<boolean> {
    const key = this.keys.refusal(processGuid);
    const r = await runScript(this.redis, RECORD_REFUSAL, [key], [refusal.generation, refusalValue(refusal)]);
    return r === 1;
  }

  /** A converge of `generation` succeeded: a refusal of it or an older generation no longer stands. */
  async clearRefusal(processGuid: string, generation: number): Promise<void> {
    await runScript(this.redis, CLEAR_REFUSAL, [this.keys.refusal(processGuid)], [generation]);
  }

  /**
   * What a worker found stops everything in the cluster, for the API's /readyz; it lapses after `ttlSeconds`
   * unless said again, so a worker that died or recovered leaves nothing stale behind.
   */
  async setClusterProblem(problem: string | undefined, ttlSeconds = 60): Promise<void> {
    if (problem === undefined) await this.redis.del(this.keys.clusterProblem);
    else await this.redis.set(this.keys.clusterProblem, problem, 'EX', ttlSeconds);
  }

  async clusterProblem(): Promise<string | undefined> {
    return (await this.redis.get(this.keys.clusterProblem)) ?? undefined;
  }

  /** The watch status the cache writer's heartbeat left, per kind (JSON each). */
  async watchStatus(): Promise<Record<string, string>> {
    return this.redis.hgetall(this.keys.watchStatus);
  }

  /** The cache facts (keys.cacheMeta), undefined before its writer first wrote them. */
  async cacheMeta(): Promise<CacheMeta | undefined> {
    const h = await this.redis.hgetall(this.keys.cacheMeta);
    if (!h['syncedAt']) return undefined;
    return {
      syncedAt: Number(h['syncedAt']),
      durationMs: Number(h['durationMs'] ?? 0),
      deployments: Number(h['deployments'] ?? 0),
      statefulsets: Number(h['statefulsets'] ?? 0),
      pods: Number(h['pods'] ?? 0),
    };
  }

  /** The sync's lock across workers: its release, or undefined when another sync holds it (sync-lock.ts). */
  async tryLockSync(owner: string, ttlMs: number): Promise<(() => Promise<void>) | undefined> {
    return tryLock(this.redis, this.keys.syncLock, owner, ttlMs);
  }

  /** When the last sync that finished began (ms), undefined if none did since Redis was empty. */
  async lastSyncBegan(): Promise<number | undefined> {
    const v = await this.redis.get(this.keys.syncBegan);
    return v === null ? undefined : Number(v);
  }

  /** A sync that began at `beganAt` finished (kept only if no later one already said so). */
  async syncFinished(beganAt: number): Promise<void> {
    await runScript(this.redis, KEEP_LATER, [this.keys.syncBegan], [String(beganAt)]);
  }
}
