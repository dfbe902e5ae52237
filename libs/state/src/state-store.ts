/**
 * Desired state and the cluster cache in Redis.
 *
 * Desired state: one JSON record per LRP (its spec, or a tombstone after a stop), each change a
 * compare-and-set so concurrent API replicas never lose one another's writes, each stamped with a
 * generation from one counter. Beside them a hash of pre-serialised scheduling infos, so GET /apps is one
 * HVALS and a string join, whatever the number of LRPs.
 *
 * Cache: read here, written by the one cache writer (CacheWriter, fenced by the leader's token; see
 * cache-writer.ts), which replaces the whole instances hash by renaming a fresh one over it, so readers see
 * one complete snapshot or the previous one, never a mix, and then keeps it current entry by entry.
 */
import { randomUUID } from 'node:crypto';
import type { Cluster, Redis } from 'ioredis';
import { schedulingInfoJson, schedulingInfosBody } from '@opi/contract';
import type { DesiredLrp, LrpRecord, Route } from '@opi/domain';
import { ConvergeInbox, inboxEntry } from './inbox.js';
import { type Keys, keys } from './keys.js';
import {
  CAS_RECORD,
  DESIRE,
  EXPIRE_IF_UNCHANGED,
  EXTEND_LOCK,
  NEXT_GENERATION,
  RELEASE_LOCK,
  SHOW_EXISTING,
  runScript,
} from './scripts.js';

/**
 * An LRP's instances as the cache writer last saw them. Each pod's index is its assignment, kept while it
 * lives (the stable index rule lives in @opi/translation).
 */
export interface CachedInstances {
  instances: {
    index: number;
    podName: string;
    sinceNs: string;
    state: string;
    placementError?: string;
    /** The index is the pod's StatefulSet ordinal (its container was told it): never shown as another. */
    ordinal?: true;
  }[];
}

export interface SyncMeta {
  syncedAt: number;
  durationMs: number;
  deployments: number;
  statefulsets: number;
  pods: number;
}

/**
 * A record as the sync sees it: a desired LRP's generation, or a stop's tombstone. `processGuid` is the
 * very string the map is keyed by, so the sync can name an LRP without a copy per listed object.
 */
export type RecordState =
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

/**
 * The replies of a MULTI or pipeline, or its first error: each command reports its own, and an
 * unreachable Redis (no replies at all) must not read as empty answers.
 */
async function replies(batch: { exec(): Promise<[Error | null, unknown][] | null> }): Promise<unknown[]> {
  const res = await batch.exec();
  if (!res) throw new Error('Connection is closed');
  for (const [err] of res) if (err) throw err;
  return res.map(([, value]) => value);
}

function schedOf(lrp: DesiredLrp): string {
  return schedulingInfoJson(lrp.processGuid, lrp.guid, lrp.version, lrp.annotation);
}

export class StateStore {
  readonly keys: Keys;
  /** The converges this store's writes ask for (see inbox.ts). */
  readonly inbox: ConvergeInbox;

  constructor(
    // A Cluster works as well: every key of one prefix shares its hash tag (see keys.ts).
    private readonly redis: Redis | Cluster,
    prefix: string,
  ) {
    this.keys = keys(prefix);
    this.inbox = new ConvergeInbox(redis, this.keys.inbox);
  }

  private async cas(
    processGuid: string,
    expected: string,
    next: LrpRecord,
    sched: 'set' | 'del' | 'keep',
    entry = '',
    converge = '',
  ): Promise<boolean> {
    const r = await runScript(
      this.redis,
      CAS_RECORD,
      [this.keys.lrp(processGuid), this.keys.lrps, this.keys.sched, this.keys.schedVersion, this.keys.inbox],
      [expected, JSON.stringify(next), processGuid, sched, entry, randomUUID(), converge],
    );
    return r === 1;
  }

  private async nextGeneration(): Promise<number> {
    const floor = String(Date.now() * 1000);
    return Number(await runScript(this.redis, NEXT_GENERATION, [this.keys.generation], [floor]));
  }

  private async raw(processGuid: string): Promise<string> {
    return (await this.redis.get(this.keys.lrp(processGuid))) ?? '';
  }

  async get(processGuid: string): Promise<LrpRecord | undefined> {
    const raw = await this.raw(processGuid);
    return raw ? (JSON.parse(raw) as LrpRecord) : undefined;
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
        this.keys.sched,
        this.keys.generation,
        this.keys.schedVersion,
        this.keys.inbox,
      ],
      [JSON.stringify(lrp), lrp.processGuid, schedOf(lrp), String(Date.now() * 1000), randomUUID()],
    )) as [number, string];
    return { changed: changed === 1, generation: Number(generation) };
  }

  /** Updates instances, annotation and (when given and not empty) image; undefined if not desired. */
  async update(
    processGuid: string,
    fields: UpdateFields,
  ): Promise<{ generation: number; lrp: DesiredLrp } | undefined> {
    for (;;) {
      const raw = await this.raw(processGuid);
      if (!raw) return undefined;
      const cur = JSON.parse(raw) as LrpRecord;
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
      if (await this.cas(processGuid, raw, next, 'set', schedOf(lrp), inboxEntry(processGuid, generation))) {
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
      const raw = await this.raw(processGuid);
      const cur = raw ? (JSON.parse(raw) as LrpRecord) : undefined;
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
      if (await this.cas(processGuid, raw, tombstone, 'del', '', inboxEntry(processGuid, generation))) {
        return { generation, existed: cur?.state === 'desired' };
      }
    }
  }

  /** Rebuilds a record from the cluster, only where Redis has none (after a flush). */
  async adopt(lrp: DesiredLrp): Promise<boolean> {
    const generation = await this.nextGeneration();
    return this.cas(lrp.processGuid, '', { state: 'desired', lrp, generation }, 'set', schedOf(lrp));
  }

  /** Called once a stopped LRP's workload is gone: the tombstone then expires. */
  async confirmStopped(processGuid: string, generation: number): Promise<void> {
    const raw = await this.raw(processGuid);
    if (!raw) return;
    const cur = JSON.parse(raw) as LrpRecord;
    if (cur.state !== 'stopped' || cur.generation !== generation) return;
    await runScript(
      this.redis,
      EXPIRE_IF_UNCHANGED,
      [this.keys.lrp(processGuid)],
      [raw, String(TOMBSTONE_TTL_SECONDS)],
    );
  }

  /** GET /apps: every scheduling info, in one round trip, already serialised. */
  async schedulingInfosBody(): Promise<string> {
    return (await this.schedulingInfos()).body;
  }

  /**
   * GET /apps' body and the version of the scheduling infos it was made from, read together (MULTI);
   * the version is undefined when none was written since Redis lost its data.
   */
  async schedulingInfos(): Promise<{ version: string | undefined; body: string }> {
    const [version, values] = await replies(
      this.redis.multi().get(this.keys.schedVersion).hvals(this.keys.sched),
    );
    return {
      version: typeof version === 'string' ? version : undefined,
      body: schedulingInfosBody((values as string[] | undefined) ?? []),
    };
  }

  /** The scheduling infos' current version (see schedulingInfos): one GET. */
  async schedulingInfosVersion(): Promise<string | undefined> {
    return (await this.redis.get(this.keys.schedVersion)) ?? undefined;
  }

  /**
   * What the sync needs of every record: its state and generation (a stop's tombstone whole, it is
   * small), not the desired LRPs. A chunk at a time (SSCAN, then one MGET): at 100,000 LRPs it never
   * holds them all, nor all their process guids. SSCAN may return a member twice (when the set is
   * resized meanwhile), so a caller takes a repeat as a no-op. Members whose record expired are dropped
   * from the set.
   */
  async *recordStates(chunkSize = 1000): AsyncGenerator<RecordState[]> {
    const gone: string[] = [];
    let cursor = '0';
    do {
      const [next, chunk] = await this.redis.sscan(this.keys.lrps, cursor, 'COUNT', chunkSize);
      cursor = next;
      if (chunk.length === 0) continue;
      const values = await this.redis.mget(...chunk.map((g) => this.keys.lrp(g)));
      const states: RecordState[] = [];
      chunk.forEach((g, j) => {
        const v = values[j];
        if (!v) {
          gone.push(g);
          return;
        }
        const rec = JSON.parse(v) as LrpRecord;
        states.push(
          rec.state === 'desired'
            ? { state: 'desired', generation: rec.generation, processGuid: g }
            : { ...rec, processGuid: g },
        );
      });
      yield states;
    } while (cursor !== '0');
    if (gone.length) await this.redis.srem(this.keys.lrps, ...gone);
  }

  /**
   * Keeps an LRP that still exists in the cluster in GET /apps although no record wants it (old versions),
   * and drops it once gone. An LRP desired again since the sync read the records is left alone, so a
   * stale sync can neither hide it nor put back an old annotation.
   */
  async showExisting(entries: Map<string, string>, drop: string[]): Promise<void> {
    const changes: [string, string][] = [...entries, ...drop.map((pg): [string, string] => [pg, ''])];
    for (let i = 0; i < changes.length; i += 500) {
      const chunk = changes.slice(i, i + 500);
      await runScript(
        this.redis,
        SHOW_EXISTING,
        [this.keys.sched, this.keys.schedVersion, ...chunk.map(([pg]) => this.keys.lrp(pg))],
        [randomUUID(), ...chunk.flat()],
      );
    }
  }

  async cachedInstances(processGuid: string): Promise<CachedInstances | undefined> {
    const v = await this.redis.hget(this.keys.instances, processGuid);
    return v ? (JSON.parse(v) as CachedInstances) : undefined;
  }

  /**
   * The cached instance assignments of these LRPs (one round trip), for the next sync to keep indexes
   * stable; as Maps, not objects keyed by pod names (a hidden class per app at 100,000 apps).
   */
  async cachedAssignments(processGuids: readonly string[]): Promise<Map<string, number>[]> {
    if (processGuids.length === 0) return [];
    const values = await this.redis.hmget(this.keys.instances, ...processGuids);
    return values.map(
      (v) =>
        new Map(
          v ? (JSON.parse(v) as CachedInstances).instances.map((i) => [i.podName, i.index] as const) : [],
        ),
    );
  }

  /** The record, the cached instances and when the cache was synced (ms, if ever), in one round trip. */
  async lrpWithInstances(
    processGuid: string,
  ): Promise<{ record?: LrpRecord; cached?: CachedInstances; syncedAt?: number }> {
    const [rec, inst, synced] = await replies(
      this.redis
        .pipeline()
        .get(this.keys.lrp(processGuid))
        .hget(this.keys.instances, processGuid)
        .hget(this.keys.syncMeta, 'syncedAt'),
    );
    return {
      ...(typeof rec === 'string' ? { record: JSON.parse(rec) as LrpRecord } : {}),
      ...(typeof inst === 'string' ? { cached: JSON.parse(inst) as CachedInstances } : {}),
      ...(typeof synced === 'string' ? { syncedAt: Number(synced) } : {}),
    };
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

  async syncMeta(): Promise<SyncMeta | undefined> {
    const h = await this.redis.hgetall(this.keys.syncMeta);
    if (!h['syncedAt']) return undefined;
    return {
      syncedAt: Number(h['syncedAt']),
      durationMs: Number(h['durationMs'] ?? 0),
      deployments: Number(h['deployments'] ?? 0),
      statefulsets: Number(h['statefulsets'] ?? 0),
      pods: Number(h['pods'] ?? 0),
    };
  }

  /**
   * A lock so only one sync runs at a time across workers; returns a release function, or undefined.
   * The holder extends it every third of `ttlMs` while it runs, so a sync may take longer than `ttlMs`,
   * while a worker that dies mid-sync blocks the next sync for at most `ttlMs`, not for a whole sync's
   * worst case.
   */
  async tryLockSync(owner: string, ttlMs: number): Promise<(() => Promise<void>) | undefined> {
    const key = this.keys.syncLock;
    const ok = await this.redis.set(key, owner, 'PX', ttlMs, 'NX');
    if (ok !== 'OK') return undefined;
    const extend = async () => {
      try {
        // Lost (expired under a blocked event loop and taken by another sync): stop extending.
        if ((await runScript(this.redis, EXTEND_LOCK, [key], [owner, String(ttlMs)])) !== 1)
          clearInterval(timer);
      } catch {
        // Redis down for a moment: the next tick tries again, and the lock may lapse meanwhile.
      }
    };
    const timer = setInterval(() => void extend(), Math.max(1, Math.floor(ttlMs / 3)));
    timer.unref();
    return async () => {
      clearInterval(timer);
      await runScript(this.redis, RELEASE_LOCK, [key], [owner]);
    };
  }
}
