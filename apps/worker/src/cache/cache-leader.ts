/**
 * Which worker watches the cluster and writes the cache: the holder of a coordination.k8s.io/v1 Lease
 * (15 s, renewed every 2 s, given up when not renewed for 10 s, as client-go's leader election). Only it
 * runs the reflectors (one watch per kind for the whole service, however many workers run) and the sync
 * queue's worker; its writes carry the Lease's transition count as a fencing token, so a holder that was
 * paused or cut off past its Lease cannot overwrite what the next one wrote.
 *
 * While leading it also beats once a second: the watches' status for every worker's /readyz, the cache's
 * `syncedAt` (what the API reports as the cache's age) while every watch is healthy, and a check that
 * Redis still holds the cache (after a flush or a restart without persistence: relist, rewrite, resync).
 */
import type { Worker } from 'bullmq';
import { type KubernetesPort, LeaderElector } from '@opi/kube';
import type { Logger } from '@opi/logging';
import { type CacheWriter, FencedOffError } from '@opi/state';
import type { HandlerDeps } from '../deps.js';
import { onJobChanged } from '../handlers/job-seen.js';
import { type WorkerOptions, startSyncWorker } from '../workers.js';
import { ClusterCache } from './cluster-cache.js';
import type { CacheKind, ClusterCacheObserver, KindStatus } from './cluster-view.js';
import type { NatsPort } from '../routing/nats-port.js';
import { RouteEmitter, type RoutingMetrics } from '../routing/route-emitter.js';

export type { CacheKind };

/** How often the holder reports the watches' status and the cache's freshness. */
export const HEARTBEAT_MS = 1000;
/** A watch not running for this long is stale (re-watches after a normal end take well under this). */
export const WATCH_STALE_MS = 10_000;
/** Between attempts to claim the cache while Redis does not answer. */
const CLAIM_RETRY_MS = 1000;

export interface CacheLeaderOptions {
  deps: HandlerDeps;
  workerOptions: WorkerOptions;
  writer: CacheWriter;
  kube: KubernetesPort;
  logger: Logger;
  /** Where the Lease lives (the service's own namespace). */
  leaseNamespace: string;
  leaseName: string;
  identity: string;
  lease?: { durationMs: number; renewDeadlineMs: number; retryPeriodMs: number };
  observer?: ClusterCacheObserver & { leading?(leading: boolean): void };
  /** OPI_ROUTING=nats: the holder also tells gorouter where every routed instance is. */
  routing?: { nats: NatsPort; metrics?: RoutingMetrics } | undefined;
}

export interface CacheLeader {
  isLeader(): boolean;
  /** The cache when this process holds the Lease and its first list is applied. */
  cache(): ClusterCache | undefined;
  close(): Promise<void>;
}

/** What the heartbeat writes per kind (JSON in the watch status hash). */
export interface WatchStatusRecord extends KindStatus {
  holder: string;
  /** When the holder wrote this (ms). */
  at: number;
  /** Since when this watch has not been running (ms), if it is not. */
  staleSince: number | undefined;
}

export function startCacheLeader(o: CacheLeaderOptions): CacheLeader {
  const { logger } = o;
  let term: Term | undefined;
  // Leading and stepping down run one after the other, never interleaved.
  let transitions: Promise<void> = Promise.resolve();
  const enqueue = (step: () => Promise<void>): Promise<void> => {
    transitions = transitions.then(step).catch((err: unknown) => {
      logger.error({ err }, 'cache writer transition failed');
    });
    return transitions;
  };

  const elector = new LeaderElector({
    kube: o.kube,
    namespace: o.leaseNamespace,
    name: o.leaseName,
    identity: o.identity,
    ...(o.lease
      ? {
          leaseDurationMs: o.lease.durationMs,
          renewDeadlineMs: o.lease.renewDeadlineMs,
          retryPeriodMs: o.lease.retryPeriodMs,
        }
      : {}),
    onStartedLeading: (token) => {
      void enqueue(async () => {
        logger.info(
          { identity: o.identity, term: token },
          'holding the cache writer Lease: watching the cluster',
        );
        o.workerOptions.namespaceAlarm?.cleared();
        o.observer?.leading?.(true);
        term = new Term(o, token, () => elector.isLeader());
        await term.begin();
      });
    },
    // Awaited by the elector: the Lease is released only once this term has stopped writing.
    onStoppedLeading: () =>
      enqueue(async () => {
        logger.warn({ identity: o.identity }, 'lost the cache writer Lease: no longer watching');
        o.observer?.leading?.(false);
        const t = term;
        term = undefined;
        await t?.end();
      }),
    onError: (err, phase) => {
      // A missing namespace (where the Lease lives) is said once, not at every claim.
      if (o.workerOptions.namespaceAlarm?.noticed(err)) return;
      logger.warn({ phase, err: err instanceof Error ? err.message : String(err) }, 'cache writer Lease');
    },
  });
  elector.start();
  return {
    isLeader: () => elector.isLeader(),
    cache: () => term?.ready(),
    close: async () => {
      await elector.stop();
      await transitions;
      await term?.end();
    },
  };
}

/** One tenure of the Lease: the reflectors, the route emitter, the sync worker and the heartbeat. */
class Term {
  private readonly cache: ClusterCache;
  private readonly emitter: RouteEmitter | undefined;
  private syncWorker: Worker | undefined;
  private heartbeat: NodeJS.Timeout | undefined;
  private beating: Promise<void> | undefined;
  private synced = false;
  private ended = false;
  private readonly staleSince = new Map<CacheKind, number>();

  constructor(
    private readonly o: CacheLeaderOptions,
    private readonly token: number,
    /** False as soon as the Lease may be another's (the elector knows before this term is ended). */
    private readonly leading: () => boolean,
  ) {
    this.emitter = o.routing
      ? new RouteEmitter({
          nats: o.routing.nats,
          leading,
          logger: o.logger,
          ...(o.routing.metrics ? { metrics: o.routing.metrics } : {}),
        })
      : undefined;
    this.cache = new ClusterCache(
      {
        kube: o.kube,
        store: o.deps.store,
        writer: o.writer,
        logger: o.logger,
        namespace: o.deps.syncNamespace,
        homeNamespace: o.leaseNamespace,
        reportCrashes: o.deps.ccInternalUrl ? o.deps.producer : undefined,
        repairs: o.deps.producer,
        routes: this.emitter,
        onJob: async (job, pods) => {
          await onJobChanged(o.deps, job, pods);
        },
        ...(o.observer ? { observer: o.observer } : {}),
      },
      token,
    );
  }

  ready(): ClusterCache | undefined {
    return this.synced ? this.cache : undefined;
  }

  /**
   * Claims the cache (retrying while Redis is away) and starts the watches; the sync worker starts once
   * the first lists are applied. Returns at once: a first list that takes long (or an API server that is
   * down) must not hold up the end of this term.
   */
  async begin(): Promise<void> {
    while (!this.ended) {
      try {
        await this.o.writer.claim(this.token);
        break;
      } catch (err) {
        if (err instanceof FencedOffError) {
          // Only when the Lease was deleted by hand (its transitions restart at 0): see CacheWriter.claim.
          this.o.logger.error(
            { token: this.token, fence: err.fence, key: this.o.writer.keys.cacheFence },
            'the cache fence is above this Lease term: delete the fence key if the Lease was re-created',
          );
        } else {
          this.o.logger.warn(
            { err: err instanceof Error ? err.message : String(err) },
            'cannot claim the cache',
          );
        }
        await new Promise((r) => setTimeout(r, CLAIM_RETRY_MS));
      }
    }
    if (this.ended) return;
    this.emitter?.start();
    this.cache.start();
    this.heartbeat = setInterval(() => {
      this.beating ??= this.beat().finally(() => {
        this.beating = undefined;
      });
    }, HEARTBEAT_MS);
    this.heartbeat.unref();
    void this.whenListed();
  }

  private async whenListed(): Promise<void> {
    const started = Date.now();
    try {
      await this.cache.synced;
    } catch {
      return; // stopped before the first list was applied
    }
    if (this.ended) return;
    this.o.logger.info({ ms: Date.now() - started, ...this.cache.counts() }, 'cluster listed, cache written');
    // The first reconcile, from the watched state (drift that arose while nobody watched); asked for
    // before the cache is called ready, so a caller waiting for that sees it queued.
    await this.o.deps.producer.syncNow().catch((err: unknown) => {
      this.o.logger.warn({ err }, 'could not enqueue the first sync');
    });
    if (this.ended) return;
    this.synced = true;
    this.syncWorker = startSyncWorker({ ...this.o.deps, cluster: this.cache }, this.o.workerOptions);
  }

  async end(): Promise<void> {
    if (this.ended) return;
    this.ended = true;
    // First: the successor may already be unregistering what this term would send again.
    this.emitter?.stop();
    clearInterval(this.heartbeat);
    // The cache first: a beat waiting on a relist (an API server that does not answer) ends with it.
    await this.cache.stop();
    await this.beating;
    await this.syncWorker?.close();
  }

  private async beat(): Promise<void> {
    // A holder resumed after a pause may no longer hold the Lease: its epoch is then gone because the
    // next holder claimed the cache, not because Redis lost it.
    if (!this.leading()) return;
    try {
      if (this.synced && !(await this.o.writer.epochPresent())) {
        this.o.logger.warn('Redis lost the cache: relisting the cluster and syncing');
        await this.o.writer.claim(this.token);
        await this.cache.relist(this.token);
        await this.o.deps.producer.syncNow();
      }
      const now = Date.now();
      const status = this.cache.status();
      const records: Record<string, string> = {};
      let healthy = this.synced;
      for (const [kind, s] of Object.entries(status) as [CacheKind, KindStatus][]) {
        if (s.state === 'watching') this.staleSince.delete(kind);
        else if (!this.staleSince.has(kind)) this.staleSince.set(kind, now);
        const since = this.staleSince.get(kind);
        if (!s.synced || (since !== undefined && now - since > WATCH_STALE_MS)) healthy = false;
        const record: WatchStatusRecord = { ...s, holder: this.o.identity, at: now, staleSince: since };
        records[kind] = JSON.stringify(record);
      }
      await this.o.writer.writeWatchStatus(this.token, records);
      if (healthy) {
        const { deployments, statefulsets, pods } = this.cache.counts();
        await this.o.writer.writeMeta(this.token, {
          syncedAt: String(now),
          deployments: String(deployments),
          statefulsets: String(statefulsets),
          pods: String(pods),
        });
      }
    } catch (err) {
      this.o.logger.warn({ err: err instanceof Error ? err.message : String(err) }, 'cache heartbeat failed');
    }
  }
}
