/**
 * Redis key layout. Everything lives under the configured prefix so several deployments can share one
 * Redis; with Redis Cluster the prefix carries a hash tag (e.g. `{opi}`) so the multi-key scripts below
 * stay on one slot.
 */
export function keys(prefix: string) {
  return {
    /** JSON LrpRecord per process guid. */
    lrp: (processGuid: string) => `${prefix}:lrp:${processGuid}`,
    /** Set of process guids that have a record. */
    lrps: `${prefix}:lrps`,
    /** Hash process guid → pre-serialised scheduling info (GET /apps). */
    sched: `${prefix}:sched`,
    /** Monotonic generation counter: orders the requests. */
    generation: `${prefix}:generation`,
    /** Hash process guid → cached instances (from the sync). */
    instances: `${prefix}:instances`,
    instancesNext: `${prefix}:instances:next`,
    /** Hash of facts about the last sync. */
    syncMeta: `${prefix}:sync`,
    syncLock: `${prefix}:sync:lock`,
  };
}

export type Keys = ReturnType<typeof keys>;
