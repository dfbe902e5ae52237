/**
 * The cluster as the cache writer sees it: five reflectors (app Deployments and StatefulSets, every
 * managed pod, task and staging Jobs, StatefulSets' FailedCreate Events) holding small projections, and what each event changes in Redis, applied at once:
 * - an app pod's event rewrites its LRP's instances entry (indexes kept as before: a pod keeps its index
 *   while it lives, a new one takes the lowest free) and enqueues the crash reports it is due;
 * - a Job's (or its pod's) event records a finished task's or staging's outcome and enqueues its report;
 * - a desired LRP's workload deleted or its spec changed by someone else enqueues its converge as a
 *   repair, and a StatefulSet's old-revision pods not ready enqueue a rollout check (drift.ts,
 *   docs/decisions/0009-watch-repairs.md);
 * - a Deployment's ReplicaFailure condition or a StatefulSet's FailedCreate Event marks its LRP's entry
 *   `unplaced` (pods the cluster refuses, docs/decisions/0012-pods-refused.md).
 * Events are folded per LRP and per Job and written in batches, so a burst of events costs one write per
 * LRP and the writer never falls behind without bound. Writes carry the Lease's fencing token.
 *
 * The sync (`syncCluster`) reads the same projections through `ClusterView` to reconcile drift.
 * One class, about 770 lines: the reflectors' events share the held pod indexes and the batched,
 * fenced writes, and a cut between them would pass that state back and forth.
 */
import {
  APP_SELECTOR,
  JOB_SELECTOR,
  MANAGED_SELECTOR,
  type AppPodSummary,
  type WorkloadSummary,
  type ManagedPodSummary,
  assignIndexMap,
  jobPodKey,
  rolloutHeldUp,
  workloadDrift,
  slimJob,
  summarizeWorkload,
  summarizeManagedPod,
  STATEFULSET_REFUSAL_EVENTS,
  STATEFULSET_REFUSAL_WINDOW_MS,
  type StatefulSetRefusal,
  podsRefusalKind,
  podsRefusedMessage,
  statefulSetRefusal,
  summarizeStatefulSetRefusal,
  type RouteSource,
  sameRouteSource,
} from '@opi/translation';
import type { Deployment, Job, Pod, StatefulSet } from '@opi/kube-objects';
import { type WorkloadKind, shownIndexes } from '@opi/domain';
import {
  type HeldVersion,
  KubeApiError,
  type KubernetesPort,
  Reflector,
  type ReflectorObserver,
  objectKey,
  type Stored,
  type Versioned,
} from '@opi/kube';
import type { JobProducer } from '@opi/queue';
import type { CacheWriter, StateStore } from '@opi/state';
import type { Logger } from '@opi/logging';
import {
  type CacheKind,
  type ClusterCacheObserver,
  type ClusterView,
  type KindStatus,
  type RewriteOptions,
} from './cluster-view.js';
import { enqueueCrashReports } from './crash-reports.js';
import { instancesEntry } from './instances-entry.js';
import type { RouteSink } from '../routing/route-emitter.js';

export type {
  CacheKind,
  ClusterCacheObserver,
  ClusterView,
  KindStatus,
  RewriteOptions,
} from './cluster-view.js';
export { instancesEntry } from './instances-entry.js';

/** A task or staging Job as held (slim), with its version. */
interface HeldJob {
  job: Stored<Job>;
  rv: HeldVersion;
}

/** Entries per fenced write, and LRPs whose previous assignments are read per round trip. */
const WRITE_BATCH = 500;

export interface ClusterCacheDeps {
  kube: KubernetesPort;
  store: StateStore;
  writer: CacheWriter;
  logger: Logger;
  /** One namespace, or undefined for every namespace. */
  namespace: string | undefined;
  /** The service's own namespace, where most workloads live. */
  homeNamespace: string;
  /** Enqueues a crash report (undefined: crash reports are off). */
  reportCrashes?: Parameters<typeof enqueueCrashReports>[0] | undefined;
  /** Enqueues repairs and rollout checks of drifted LRPs (undefined: the watch repairs nothing). */
  repairs?: Pick<JobProducer, 'repairLrp' | 'settleRolloutNow'> | undefined;
  /** Told each LRP's routes and Ready instances whenever either changed (undefined: routing is off). */
  routes?: RouteSink | undefined;
  /** Called with a Job (slim) and its pods whenever either changed; records outcomes, enqueues reports. */
  onJob(job: Stored<Job>, pods: Pod[]): Promise<void>;
  observer?: ClusterCacheObserver;
}

type AnyReflector = Pick<
  Reflector<'pods', Versioned>,
  | 'start'
  | 'stop'
  | 'relist'
  | 'synced'
  | 'state'
  | 'hasSynced'
  | 'size'
  | 'resourceVersion'
  | 'lastEventAt'
  | 'watchingSince'
>;

export class ClusterCache implements ClusterView {
  private readonly deploymentReflector: Reflector<'deployments', WorkloadSummary>;
  /** Watched in either mode: LRPs made before the mode changed keep their kind. */
  private readonly statefulSetReflector: Reflector<'statefulsets', WorkloadSummary>;
  private readonly podReflector: Reflector<'pods', ManagedPodSummary>;
  private readonly jobReflector: Reflector<'jobs', HeldJob>;
  /** StatefulSets' FailedCreate Events: their pods refused (decision 12). */
  private readonly refusalReflector: Reflector<'events', StatefulSetRefusal>;
  private readonly keyOf: (m: { namespace?: string | undefined; name: string }) => string;
  /** LRP → the API server's message refusing its pods, as last found (a Deployment's condition, a StatefulSet's Events). */
  private readonly podsRefused = new Map<
    string,
    { message: string; statefulSet?: { atMs: number; replicas: number } }
  >();
  /** LRP → what its entry says of refused pods now: logged and counted when it changes. */
  private readonly unplacedShown = new Map<string, string>();
  /**
   * StatefulSet LRP → since when refusal Events said before no longer hold: its spec changed, or its
   * pods all came.
   */
  private readonly specChangedAt = new Map<string, number>();
  /** LRP → the timer that looks again once its StatefulSet refusal is past the window. */
  private readonly refusalTimers = new Map<string, NodeJS.Timeout>();
  /** LRP → its routes, for LRPs with routes while routing is on (from its workload's annotations). */
  private readonly routeSources = new Map<string, RouteSource>();
  /**
   * LRP → its live app pods: the pod itself when it is the only one (most LRPs), else an array. At
   * 100,000 LRPs a Map per LRP cost ten times an array, and an array per LRP was megabytes more.
   */
  private readonly lrpPods = new Map<string, AppPodSummary | AppPodSummary[]>();
  /** The namespace string projections share (parsed anew from each object, it was one copy each). */
  private namespaceString = '';
  /** When the last whole rewrite finished: the sync right after a takeover's first one skips it. */
  private rewrittenAt = 0;
  /** App pods held now (instances), kept as they come and go. */
  private appPods = 0;
  /** `namespace/job` → its pods by name. */
  private readonly jobPods = new Map<string, Map<string, Pod>>();
  /** LRPs whose entry must be written, with the oldest change not yet written. */
  private dirtyLrps = new Map<string, number | undefined>();
  private dirtyJobs = new Set<string>();
  /** LRPs whose workload drifted, with the event that showed it (a repair's cause). */
  private drifted = new Map<string, string>();
  /** StatefulSet LRPs whose rollout is held up, with the generation their workload is stamped with. */
  private heldUp = new Map<string, number>();

  private flushing: Promise<void> | undefined;
  /** Whole rewrites in progress; per-LRP flushes wait for them. */
  private rewriting = 0;
  private stopped = false;
  /** Whether the first snapshot was written; until then events only fill memory. */
  private ready = false;
  readonly synced: Promise<void>;

  constructor(
    private readonly deps: ClusterCacheDeps,
    private token: number,
  ) {
    const { kube, namespace } = deps;
    const summaryOptions = { routing: deps.routes !== undefined };
    // In the namespace most objects live in, the name is the key (the string the projection holds
    // anyway); elsewhere `namespace/name`. A name has no '/', so the two never meet. At 100,000 apps a
    // second string per object was 28 MB.
    const home = namespace ?? deps.homeNamespace;
    const keying = {
      keyOf: (m: { namespace?: string | undefined; name: string }) =>
        m.namespace === home ? m.name : objectKey(m),
    };
    this.keyOf = keying.keyOf;
    const observer = (kind: CacheKind): ReflectorObserver => ({
      onEvent: (type) => deps.observer?.event?.(kind, type),
      onRelist: (reason, stats) => {
        deps.observer?.relist?.(kind, reason);
        deps.logger.info({ kind, reason, ...stats }, 'cluster listed');
      },
      onWatchRestart: (reason) => deps.observer?.restart?.(kind, reason),
      onError: (err, info) => {
        const e = err instanceof KubeApiError ? err : undefined;
        const line = { kind, ...info, err: err instanceof Error ? err.message : String(err) };
        if (e && !e.transient) deps.logger.error(line, 'watch refused');
        else deps.logger.warn(line, 'watch failed');
      },
    });
    const workloads = <R extends 'deployments' | 'statefulsets'>(resource: R, kind: WorkloadKind) =>
      new Reflector({
        kube,
        resource,
        namespace,
        ...keying,
        labelSelector: APP_SELECTOR,
        project: (d: Stored<Deployment> | Stored<StatefulSet>, rv) => {
          const summary = summarizeWorkload(kind, d, rv, summaryOptions);
          if (summary) {
            summary.processGuid = this.sharedGuid(summary.processGuid);
            if (summary.namespace === this.namespaceString) summary.namespace = this.namespaceString;
            else this.namespaceString = summary.namespace;
          }
          return summary;
        },
        handler: {
          onUpsert: (_key, next, prev) => {
            this.workloadSeen(next, prev);
          },
          onDelete: (_key, prev) => {
            this.workloadSeen(undefined, prev);
          },
        },
        observer: observer(resource),
      });
    this.deploymentReflector = workloads('deployments', 'deployment');
    this.statefulSetReflector = workloads('statefulsets', 'statefulset');
    this.podReflector = new Reflector({
      kube,
      resource: 'pods',
      namespace,
      ...keying,
      labelSelector: MANAGED_SELECTOR,
      project: (p: Stored<Pod>, rv) => {
        const summary = summarizeManagedPod(p, rv, summaryOptions);
        if (summary?.kind === 'app') summary.processGuid = this.sharedGuid(summary.processGuid);
        return summary;
      },
      handler: {
        onUpsert: (key, next, prev) => {
          this.podGone(prev);
          this.podSeen(next);
          if (next.kind === 'app') this.checkRollout(key, next);
        },
        onDelete: (_key, prev) => {
          this.podGone(prev, Date.now());
        },
      },
      observer: observer('pods'),
    });
    this.jobReflector = new Reflector({
      kube,
      resource: 'jobs',
      namespace,
      labelSelector: JOB_SELECTOR,
      project: (j: Stored<Job>, rv) => ({ job: slimJob(j), rv }),
      handler: {
        onUpsert: (key) => {
          this.markJob(key);
        },
      },
      observer: observer('jobs'),
    });
    this.refusalReflector = new Reflector({
      kube,
      resource: 'events',
      namespace,
      fieldSelector: STATEFULSET_REFUSAL_EVENTS,
      project: (e, rv) => summarizeStatefulSetRefusal(e, rv),
      handler: {
        onUpsert: (_key, next) => {
          this.statefulSetRefusalSeen(next.namespace, next.statefulSet);
        },
        onDelete: (_key, prev) => {
          this.statefulSetRefusalSeen(prev.namespace, prev.statefulSet);
        },
      },
      observer: observer('events'),
    });
    this.synced = this.firstSync();
    // Observed by start(); a failure is the caller's to see through `synced`.
    this.synced.catch(() => undefined);
  }

  /** Pods first: each workload listed after its pods shares their process guid string (sharedGuid). */
  private reflectors(): [CacheKind, AnyReflector][] {
    return [
      ['pods', this.podReflector],
      ['deployments', this.deploymentReflector],
      ['statefulsets', this.statefulSetReflector],
      ['jobs', this.jobReflector],
      ['events', this.refusalReflector],
    ];
  }

  /**
   * Starts the reflectors one after another, each once the one before has its first list: at 100,000
   * apps two lists' pages and rows in memory at once were the worker's peak.
   */
  start(): void {
    void this.reflectors()
      .reduce<Promise<void>>(async (before, [, r]) => {
        await before;
        if (!this.stopped) r.start();
        await r.synced;
      }, Promise.resolve())
      .catch(() => undefined);
  }

  async stop(): Promise<void> {
    this.stopped = true;
    for (const t of this.refusalTimers.values()) clearTimeout(t);
    this.refusalTimers.clear();
    await Promise.all(this.reflectors().map(([, r]) => r.stop()));
    await this.flushing;
  }

  /** After Redis lost the cache (or on request): relists every kind, then writes the cache whole. */
  async relist(token: number): Promise<void> {
    this.token = token;
    await Promise.all(this.reflectors().map(([, r]) => r.relist('Redis lost the cache')));
    await this.rewriteInstances();
    for (const key of this.jobReflector.keys()) this.markJob(key);
  }

  /** What the cache holds now: workloads of each kind and app pods (instances). */
  counts(): { deployments: number; statefulsets: number; pods: number } {
    return {
      deployments: this.deploymentReflector.size,
      statefulsets: this.statefulSetReflector.size,
      pods: this.appPods,
    };
  }

  status(): Record<CacheKind, KindStatus> {
    const out = {} as Record<CacheKind, KindStatus>;
    for (const [kind, r] of this.reflectors()) {
      out[kind] = {
        state: r.state,
        synced: r.hasSynced,
        objects: r.size,
        resourceVersion: r.resourceVersion,
        lastEventAt: r.lastEventAt,
        watchingSince: r.watchingSince,
      };
    }
    return out;
  }

  /** Resolves once every event seen so far is written (or its write failed): for tests and shutdown. */
  async settled(): Promise<void> {
    await this.synced;
    while (this.flushing) await this.flushing;
  }

  // --- ClusterView ---------------------------------------------------------------------------------------

  *workloads(): Iterable<WorkloadSummary> {
    yield* this.deploymentReflector.values();
    yield* this.statefulSetReflector.values();
  }

  *jobs(): Iterable<Stored<Job>> {
    for (const held of this.jobReflector.values()) yield held.job;
  }

  podsOfJob(namespace: string, name: string): Pod[] {
    return [...(this.jobPods.get(`${namespace}/${name}`)?.values() ?? [])];
  }

  /**
   * Every LRP's entry into a fresh snapshot swapped in at once (fenced), keeping the indexes Redis holds.
   * Pending per-LRP writes are dropped: the snapshot has them.
   */
  async rewriteInstances(options: RewriteOptions = {}): Promise<{ pods: number }> {
    const within = options.unlessWithinMs;
    if (within !== undefined && Date.now() - this.rewrittenAt < within) return { pods: this.appPods };
    // No per-LRP write may land between the snapshot's reads and its rename (the rename would undo it):
    // flushes wait, and what changes meanwhile stays marked for the first flush after.
    this.rewriting++;
    try {
      while (this.flushing) await this.flushing;
      this.dirtyLrps.clear();
      return await this.writeSnapshot();
    } finally {
      this.rewriting--;
      this.schedule();
    }
  }

  private async writeSnapshot(): Promise<{ pods: number }> {
    const started = Date.now();
    const snapshot = this.deps.writer.snapshot(this.token);
    const lrps = [...new Set([...this.lrpPods.keys(), ...this.podsRefused.keys()])];
    let pods = 0;
    try {
      for (let b = 0; b < lrps.length; b += WRITE_BATCH) {
        const batch = lrps.slice(b, b + WRITE_BATCH);
        const previous = await this.deps.store.cachedAssignments(batch);
        for (const [k, pg] of batch.entries()) {
          const run = this.podsOf(pg);
          pods += run.length;
          const assignments = assignIndexMap(previous[k] ?? new Map<string, number>(), run);
          this.route(pg, run, assignments, undefined);
          const unplaced = this.unplacedOf(pg, run.length);
          if (run.length === 0 && unplaced === undefined) continue;
          await snapshot.add(pg, instancesEntry(run, assignments, unplaced));
          await this.reportCrashes(run, assignments);
        }
      }
      await snapshot.commit({
        syncedAt: String(Date.now()),
        durationMs: String(Date.now() - started),
        deployments: String(this.deploymentReflector.size),
        statefulsets: String(this.statefulSetReflector.size),
        pods: String(pods),
      });
      this.rewrittenAt = Date.now();
      return { pods };
    } catch (e) {
      await snapshot.abandon().catch(() => undefined);
      throw e;
    }
  }

  // --- events --------------------------------------------------------------------------------------------

  private async firstSync(): Promise<void> {
    await Promise.all(this.reflectors().map(([, r]) => r.synced));
    // The first snapshot is retried until written: without it the cache is not this writer's yet.
    for (;;) {
      if (this.stopped) return;
      try {
        await this.rewriteInstances();
        break;
      } catch (err) {
        this.deps.logger.warn(
          { err: err instanceof Error ? err.message : String(err) },
          'cache write failed',
        );
        await new Promise((r) => setTimeout(r, 1000));
      }
    }
    this.ready = true;
    for (const key of this.jobReflector.keys()) this.markJob(key);
    this.schedule();
  }

  private podSeen(s: ManagedPodSummary): void {
    if (s.kind === 'app') {
      this.appPods++;
      const had = this.lrpPods.get(s.processGuid);
      if (had === undefined) this.lrpPods.set(s.processGuid, s);
      else if (Array.isArray(had)) had.push(s);
      else this.lrpPods.set(s.processGuid, [had, s]);
      this.markLrp(s.processGuid, s.changedAtS === undefined ? undefined : s.changedAtS * 1000);
    } else {
      const key = jobPodKey(s.pod);
      let pods = this.jobPods.get(key);
      if (!pods) this.jobPods.set(key, (pods = new Map<string, Pod>()));
      pods.set(s.pod.metadata.name, s.pod);
      this.markJob(key);
    }
  }

  private podGone(s: ManagedPodSummary | undefined, changedAt?: number): void {
    if (!s) return;
    if (s.kind === 'app') {
      const held = this.podsOf(s.processGuid);
      const pods = held.filter((p) => p.name !== s.name);
      this.appPods -= held.length - pods.length;
      if (pods.length > 1) this.lrpPods.set(s.processGuid, pods);
      else if (pods[0]) this.lrpPods.set(s.processGuid, pods[0]);
      else this.lrpPods.delete(s.processGuid);
      this.markLrp(s.processGuid, changedAt);
    } else {
      const key = jobPodKey(s.pod);
      const pods = this.jobPods.get(key);
      pods?.delete(s.pod.metadata.name);
      if (pods?.size === 0) this.jobPods.delete(key);
    }
  }

  private podsOf(processGuid: string): AppPodSummary[] {
    const held = this.lrpPods.get(processGuid);
    return held === undefined ? [] : Array.isArray(held) ? held : [held];
  }

  /**
   * The process guid string the LRP's pods already hold, if any: a Deployment and its pods then share one
   * (three copies per LRP otherwise, parsed anew from each object).
   */
  private sharedGuid(processGuid: string): string {
    const held = this.lrpPods.get(processGuid);
    if (held === undefined) return processGuid;
    return (Array.isArray(held) ? held[0]?.processGuid : held.processGuid) ?? processGuid;
  }

  /** A workload event: a deletion or someone else's spec change is repaired; a held-up rollout checked. */
  private workloadSeen(next: WorkloadSummary | undefined, prev: WorkloadSummary | undefined): void {
    this.refusalOfWorkload(next, prev);
    this.routesOfWorkload(next, prev);
    const drift = workloadDrift(prev, next);
    const held = next ?? prev;
    if (drift && held) {
      this.drifted.set(held.processGuid, `watch-${drift === 'deleted' ? 'd' : 'e'}${held.rv}`);
      this.schedule();
    }
    // Only a StatefulSet's rollout can be held up: a Deployment's status events gather no pods.
    if (next?.kind === 'statefulset' && rolloutHeldUp(next, this.podsOf(next.processGuid))) {
      this.markHeldUp(next);
    }
  }

  /** A workload event, for routing: routes added, changed or gone (with the workload) rewrite the LRP's. */
  private routesOfWorkload(next: WorkloadSummary | undefined, prev: WorkloadSummary | undefined): void {
    const held = next ?? prev;
    if (!held || !this.deps.routes) return;
    const had = this.routeSources.get(held.processGuid);
    if (sameRouteSource(had, next?.routes)) return;
    if (next?.routes) this.routeSources.set(held.processGuid, next.routes);
    else this.routeSources.delete(held.processGuid);
    this.markLrp(held.processGuid, undefined);
  }

  /** Tells routing the LRP's routes and Ready instances, each with the index /instances shows. */
  private route(
    pg: string,
    run: readonly AppPodSummary[],
    assignments: ReadonlyMap<string, number>,
    changedAt: number | undefined,
  ): void {
    const sink = this.deps.routes;
    if (!sink) return;
    const source = this.routeSources.get(pg);
    if (!source) {
      sink.lrpRouted(pg, undefined, [], changedAt);
      return;
    }
    const shown = shownIndexes(
      run.map((p) => ({ index: assignments.get(p.name) ?? 0, ordinal: p.ordinal !== undefined })),
      source.desired,
    );
    const instances = [];
    for (const [i, p] of run.entries()) {
      if (p.ip) instances.push({ ip: p.ip, uid: p.uid ?? '', index: shown[i] ?? 0 });
    }
    sink.lrpRouted(pg, source, instances, changedAt);
  }

  /**
   * A workload event, for refused pods: a Deployment carries them in its condition; a StatefulSet whose
   * spec changed no longer stands by the Events said before (they are judged again from the next one).
   */
  private refusalOfWorkload(next: WorkloadSummary | undefined, prev: WorkloadSummary | undefined): void {
    const held = next ?? prev;
    if (!held) return;
    if (held.kind === 'deployment') {
      const had = this.podsRefused.get(held.processGuid)?.message;
      const now = next?.podsRefused;
      if (now === had) return;
      if (now === undefined) this.podsRefused.delete(held.processGuid);
      else this.podsRefused.set(held.processGuid, { message: now });
      this.markLrp(held.processGuid, undefined);
      return;
    }
    if (!next) {
      this.specChangedAt.delete(held.processGuid);
      clearTimeout(this.refusalTimers.get(held.processGuid));
      this.refusalTimers.delete(held.processGuid);
      if (this.podsRefused.delete(held.processGuid)) this.markLrp(held.processGuid, undefined);
      return;
    }
    if (prev && next.specGeneration !== prev.specGeneration) {
      this.specChangedAt.set(next.processGuid, Date.now());
    }
    this.statefulSetRefusalSeen(held.namespace, held.name);
  }

  /** A StatefulSet's refusal Events or the set changed: what its LRP's entry says is judged again. */
  private statefulSetRefusalSeen(namespace: string, statefulSet: string): void {
    const sts = this.statefulSetReflector.get(this.keyOf({ namespace, name: statefulSet }));
    if (!sts) return;
    const pg = sts.processGuid;
    const events = [...this.refusalReflector.values()].filter(
      (e) => e.statefulSet === statefulSet && e.namespace === namespace,
    );
    const latest = statefulSetRefusal(events, {
      pods: 0,
      replicas: 1,
      specChangedAtMs: this.specChangedAt.get(pg),
      nowMs: Date.now(),
    });
    const had = this.podsRefused.get(pg);
    const replicas = sts.replicas ?? 1;
    const same = latest
      ? had?.message === latest.message &&
        had.statefulSet?.atMs === latest.atMs &&
        had.statefulSet.replicas === replicas
      : had === undefined;
    // A StatefulSet's status events change nothing here: only a changed refusal rewrites the entry.
    if (same) return;
    clearTimeout(this.refusalTimers.get(pg));
    this.refusalTimers.delete(pg);
    if (!latest) {
      this.podsRefused.delete(pg);
    } else {
      this.podsRefused.set(pg, {
        message: latest.message,
        statefulSet: { atMs: latest.atMs, replicas },
      });
      // Past the window without another Event, the refusal is over: look again then.
      const due = latest.atMs + STATEFULSET_REFUSAL_WINDOW_MS - Date.now() + 1000;
      const timer = setTimeout(() => {
        this.refusalTimers.delete(pg);
        this.statefulSetRefusalSeen(namespace, statefulSet);
      }, due);
      timer.unref();
      this.refusalTimers.set(pg, timer);
    }
    this.markLrp(pg, undefined);
  }

  /**
   * What the LRP's entry says of refused pods: the worded message, unless its StatefulSet's pods now exist
   * up to the desired count or the refusal is past its window. A change is logged and, when it begins,
   * counted (once per episode, not per Event).
   */
  private unplacedOf(pg: string, pods: number): string | undefined {
    const r = this.podsRefused.get(pg);
    let message: string | undefined;
    if (r) {
      const sts = r.statefulSet;
      if (sts !== undefined && pods >= sts.replicas) {
        // Superseded: its pods were let in. Events said before now no longer hold (a later restart's
        // missing pod must not bring the old refusal back).
        this.podsRefused.delete(pg);
        this.specChangedAt.set(pg, Date.now());
      } else if (sts === undefined || Date.now() - sts.atMs <= STATEFULSET_REFUSAL_WINDOW_MS) {
        message = r.message;
      }
    }
    const shown = this.unplacedShown.get(pg);
    if (message !== shown) {
      if (message === undefined) {
        this.unplacedShown.delete(pg);
        this.deps.logger.info({ processGuid: pg }, 'instances no longer refused by the cluster');
      } else {
        this.unplacedShown.set(pg, message);
        this.deps.logger.info({ processGuid: pg, refused: message }, 'instances refused by the cluster');
        if (shown === undefined) this.deps.observer?.podsRefused?.(podsRefusalKind(message));
      }
    }
    return message === undefined ? undefined : podsRefusedMessage(message);
  }

  /** A StatefulSet pod of an older revision, not ready: its rollout is held up (rollout.ts). */
  private checkRollout(key: string, pod: AppPodSummary): void {
    if (pod.ordinal === undefined || pod.state === 'RUNNING') return;
    // A StatefulSet's pod is named `<statefulset>-<ordinal>`, in its namespace (so keyed alike).
    const sts = this.statefulSetReflector.get(key.slice(0, key.lastIndexOf('-')));
    if (sts?.processGuid === pod.processGuid && rolloutHeldUp(sts, [pod])) this.markHeldUp(sts);
  }

  private markHeldUp(sts: WorkloadSummary): void {
    if (sts.generation === undefined) return;
    this.heldUp.set(sts.processGuid, sts.generation);
    this.schedule();
  }

  private markLrp(processGuid: string, changedAt: number | undefined): void {
    const had = this.dirtyLrps.get(processGuid);
    this.dirtyLrps.set(
      processGuid,
      had === undefined ? changedAt : changedAt === undefined ? had : Math.min(had, changedAt),
    );
    this.schedule();
  }

  private markJob(key: string): void {
    this.dirtyJobs.add(key);
    this.schedule();
  }

  /** One flush at a time; events arriving meanwhile are folded into the next. */
  private schedule(): void {
    if (!this.ready || this.flushing || this.stopped || this.rewriting > 0) return;
    this.flushing = new Promise<void>((resolve) => {
      setImmediate(resolve);
    })
      .then(() => this.flush())
      .catch((err: unknown) => {
        this.deps.logger.warn(
          { err: err instanceof Error ? err.message : String(err) },
          'cache write failed',
        );
        return new Promise<void>((resolve) => setTimeout(resolve, 500).unref());
      })
      .finally(() => {
        this.flushing = undefined;
        if (this.dirtyLrps.size + this.dirtyJobs.size + this.drifted.size + this.heldUp.size > 0) {
          this.schedule();
        }
      });
  }

  private async flush(): Promise<void> {
    while (this.dirtyLrps.size > 0 && !this.stopped) {
      const batch = [...this.dirtyLrps].slice(0, WRITE_BATCH);
      for (const [pg] of batch) this.dirtyLrps.delete(pg);
      try {
        await this.writeLrps(batch);
      } catch (e) {
        // Put them back (a later change may have marked them again meanwhile: keep the older time).
        for (const [pg, at] of batch) this.markLrp(pg, at);
        throw e;
      }
    }
    await this.repairDrifted();
    const jobs = [...this.dirtyJobs];
    this.dirtyJobs.clear();
    for (const key of jobs) {
      if (this.stopped) return;
      const job = this.jobReflector.get(key)?.job;
      if (!job) continue;
      try {
        await this.deps.onJob(job, this.podsOfJob(job.metadata.namespace ?? '', job.metadata.name));
      } catch (e) {
        this.dirtyJobs.add(key);
        throw e;
      }
    }
  }

  /**
   * Enqueues a repair for each drifted LRP that is desired (our own stop deleting its workload costs one
   * read of the record), and a rollout check for each held-up one. Folded per LRP: a burst is one job.
   */
  private async repairDrifted(): Promise<void> {
    const repairs = this.deps.repairs;
    if (!repairs) {
      this.drifted.clear();
      this.heldUp.clear();
      return;
    }
    while (this.drifted.size > 0 && !this.stopped) {
      const batch = [...this.drifted].slice(0, WRITE_BATCH);
      for (const [pg] of batch) this.drifted.delete(pg);
      try {
        const records = await Promise.all(batch.map(([pg]) => this.deps.store.get(pg)));
        for (const [k, [pg, cause]] of batch.entries()) {
          if (records[k]?.state !== 'desired') continue;
          this.deps.logger.info({ processGuid: pg, cause }, 'workload drifted: converging');
          await repairs.repairLrp(pg, cause);
        }
      } catch (e) {
        for (const [pg, cause] of batch) if (!this.drifted.has(pg)) this.drifted.set(pg, cause);
        throw e;
      }
    }
    const held = [...this.heldUp];
    this.heldUp.clear();
    for (const [k, [pg, generation]] of held.entries()) {
      try {
        await repairs.settleRolloutNow(pg, generation);
      } catch (e) {
        for (const [p, g] of held.slice(k)) if (!this.heldUp.has(p)) this.heldUp.set(p, g);
        throw e;
      }
    }
  }

  private async writeLrps(batch: [string, number | undefined][]): Promise<void> {
    const pgs = batch.map(([pg]) => pg);
    const previous = await this.deps.store.cachedAssignments(pgs);
    const put: [string, string][] = [];
    const gone: string[] = [];
    const crashes: [AppPodSummary[], Map<string, number>][] = [];
    for (const [k, [pg, at]] of batch.entries()) {
      const run = this.podsOf(pg);
      const unplaced = this.unplacedOf(pg, run.length);
      if (run.length === 0 && unplaced === undefined) {
        this.route(pg, run, new Map(), at);
        gone.push(pg);
        continue;
      }
      const assignments = assignIndexMap(previous[k] ?? new Map<string, number>(), run);
      this.route(pg, run, assignments, at);
      put.push([pg, instancesEntry(run, assignments, unplaced)]);
      crashes.push([run, assignments]);
    }
    await this.deps.writer.putInstances(this.token, put);
    await this.deps.writer.deleteInstances(this.token, gone);
    const now = Date.now();
    for (const [, at] of batch) {
      if (at !== undefined) this.deps.observer?.lag?.('pods', Math.max(0, now - at) / 1000);
    }
    for (const [run, assignments] of crashes) await this.reportCrashes(run, assignments);
  }

  /**
   * The LRP's crash reports, their indexes shown as /instances shows them: against the desired count of
   * the LRP's record, read only when a crash is due (rare).
   */
  private async reportCrashes(run: AppPodSummary[], assignments: ReadonlyMap<string, number>): Promise<void> {
    const pg = run.find((p) => p.unreported)?.processGuid;
    if (!this.deps.reportCrashes || pg === undefined) return;
    const record = await this.deps.store.get(pg);
    const desired = record ? (record.state === 'desired' ? record.lrp.instances : 0) : undefined;
    await enqueueCrashReports(this.deps.reportCrashes, run, assignments, desired);
  }
}
