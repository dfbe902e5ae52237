/**
 * Redis key layout. Everything lives under the configured prefix so several deployments can share one
 * Redis; with Redis Cluster the prefix carries a hash tag (e.g. `{opi}`) so the multi-key scripts below
 * stay on one slot.
 */
export function keys(prefix: string) {
  return {
    /** JSON LrpRecord per process guid. */
    // Under `state:` so no key can meet BullMQ's, which live at `<prefix>:<queue>:…` (e.g. `lrp:`).
    lrp: (processGuid: string) => `${prefix}:state:lrp:${processGuid}`,
    /** Set of process guids that have a record. */
    lrps: `${prefix}:state:lrps`,
    /** Hash process guid → scheduling info, already in CC's format (GET /apps; see scheduling-infos.ts). */
    schedulingInfos: `${prefix}:state:sched`,
    /**
     * A fresh random token whenever `schedulingInfos` changes (never reused, so none survives a flush as
     * stale).
     */
    schedulingInfosVersion: `${prefix}:state:sched:version`,
    /** Monotonic generation counter: orders the requests. */
    generation: `${prefix}:state:generation`,
    /** Hash process guid → the LRP's cached instances, written by the watch's cache writer (instances-cache.ts). */
    instances: `${prefix}:state:instances`,
    /** One snapshot of `instances` while the cache writer writes it, until its commit (see FencedSnapshot). */
    instancesNext: (id: string) => `${prefix}:state:instances:next:${id}`,
    /**
     * The refusal of an LRP's desire by the cluster, `<generation> <JSON>` (refusals.ts); shown by
     * /instances while the record has that generation.
     */
    refusal: (processGuid: string) => `${prefix}:state:refusal:${processGuid}`,
    /** Hash of facts about the cache: when its writer last confirmed it fresh (`syncedAt`), and what it holds. */
    cacheMeta: `${prefix}:state:sync`,
    syncLock: `${prefix}:state:sync:lock`,
    /** When the last sync that finished began (ms): a sync asked for before that has nothing left to do. */
    syncBegan: `${prefix}:state:sync:began`,
    /** List of converges the API's writes ask for: the converge inbox (inbox.ts). */
    inbox: `${prefix}:state:inbox:converge`,
    /** JSON TaskRecord per task guid. */
    task: (taskGuid: string) => `${prefix}:state:task:${taskGuid}`,
    /** Tasks CC has not been told the end of: GET /tasks. */
    tasks: `${prefix}:state:tasks`,
    /** JSON StagingRecord per staging guid. */
    staging: (stagingGuid: string) => `${prefix}:state:staging:${stagingGuid}`,
    /** The highest fencing token (the Lease's transitions) a cache writer has used (see CacheWriter). */
    cacheFence: `${prefix}:state:cache:fence`,
    /**
     * A random id the cache writer sets when it claims the cache; its absence means Redis lost its data
     * (a flush, a restart without persistence) since, and the cache must be written whole again.
     */
    cacheEpoch: `${prefix}:state:cache:epoch`,
    /** Hash of per-kind watch status written by the cache writer (resourceVersion, last event, …). */
    watchStatus: `${prefix}:state:watch`,
    /** What stops the workers from doing anything in the cluster (e.g. a missing namespace), with a TTL. */
    clusterProblem: `${prefix}:state:problem`,
  };
}

export type Keys = ReturnType<typeof keys>;
