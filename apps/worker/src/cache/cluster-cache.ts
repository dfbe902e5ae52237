/**
 * The cluster as the cache writer sees it: five reflectors (app Deployments and StatefulSets, every
 * managed pod, task and staging Jobs, StatefulSets' FailedCreate Events) holding small projections, and
 * what each event changes:
 * - an app pod's event rewrites its LRP's instances entry (indexes kept as before: a pod keeps its index
 *   while it lives, a new one takes the lowest free) and enqueues the crash reports it is due;
 * - a Job's (or its pod's) event records a finished task's or staging's outcome and enqueues its report;
 * - a desired LRP's workload deleted or its spec changed by someone else enqueues its converge as a
 *   repair, and a StatefulSet's old-revision pods not ready enqueue a rollout check (drift.ts,
 *   docs/decisions/0009-watch-repairs.md);
 * - a Deployment's ReplicaFailure condition or a StatefulSet's FailedCreate Event marks its LRP's entry
 *   `unplaced` (refused-pods.ts).
 * What is held lives in pod-index.ts, refused-pods.ts and route-feed.ts; the writes, folded and batched,
 * in cache-flusher.ts. The sync (`syncCluster`) reads the same projections through `ClusterView`.
 */
import {
  APP_SELECTOR,
  JOB_SELECTOR,
  MANAGED_SELECTOR,
  STATEFULSET_REFUSAL_EVENTS,
  type AppPodSummary,
  type ManagedPodSummary,
  type StatefulSetRefusal,
  type WorkloadSummary,
  jobPodKey,
  rolloutHeldUp,
  slimJob,
  summarizeManagedPod,
  summarizeStatefulSetRefusal,
  summarizeWorkload,
  workloadDrift,
} from '@opi/translation';
import type { Deployment, Job, Pod, StatefulSet } from '@opi/kube-objects';
import type { WorkloadKind } from '@opi/domain';
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
import type { Logger } from '@opi/logging';
import { CacheFlusher, type CacheFlusherDeps } from './cache-flusher.js';
import type {
  CacheKind,
  ClusterCacheObserver,
  ClusterView,
  KindStatus,
  RewriteOptions,
} from './cluster-view.js';
import { PodIndex } from './pod-index.js';
import { RefusedPods } from './refused-pods.js';
import { RouteFeed } from './route-feed.js';
import type { RouteSink } from '../routing/route-emitter.js';

/** A task or staging Job as held (slim), with its version. */
interface HeldJob {
  job: Stored<Job>;
  rv: HeldVersion;
}

export interface ClusterCacheDeps extends CacheFlusherDeps {
  kube: KubernetesPort;
  logger: Logger;
  /** One namespace, or undefined for every namespace. */
  namespace: string | undefined;
  /** The service's own namespace, where most workloads live. */
  homeNamespace: string;
  /** Told each LRP's routes and Ready instances whenever either changed (undefined: routing is off). */
  routes?: RouteSink | undefined;
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
  private readonly pods = new PodIndex();
  private readonly refused: RefusedPods;
  private readonly routes: RouteFeed | undefined;
  private readonly flusher: CacheFlusher;
  /** The namespace string projections share (parsed anew from each object, it was one copy each). */
  private namespaceString = '';
  private stopped = false;
  readonly synced: Promise<void>;

  constructor(
    private readonly deps: ClusterCacheDeps,
    token: number,
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
            summary.processGuid = this.pods.sharedGuid(summary.processGuid);
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
        if (summary?.kind === 'app') summary.processGuid = this.pods.sharedGuid(summary.processGuid);
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
          this.flusher.markJob(key);
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
          this.refused.statefulSetSeen(next.namespace, next.statefulSet);
        },
        onDelete: (_key, prev) => {
          this.refused.statefulSetSeen(prev.namespace, prev.statefulSet);
        },
      },
      observer: observer('events'),
    });
    this.refused = new RefusedPods({
      logger: deps.logger,
      statefulSet: (ns, name) => this.statefulSetReflector.get(this.keyOf({ namespace: ns, name })),
      refusalEvents: (ns, sts) =>
        [...this.refusalReflector.values()].filter((e) => e.statefulSet === sts && e.namespace === ns),
      changed: (pg) => {
        this.flusher.markLrp(pg, undefined);
      },
      began: (reason) => deps.observer?.podsRefused?.(reason),
    });
    const { pods, refused } = this;
    const routes = deps.routes === undefined ? undefined : new RouteFeed(deps.routes);
    this.routes = routes;
    this.flusher = new CacheFlusher(
      deps,
      {
        // Walked, not copied: the snapshot makes the one array of them it needs.
        *lrps() {
          yield* pods.lrps();
          yield* refused.lrps();
        },
        podsOf: (pg) => this.pods.podsOf(pg),
        unplacedOf: (pg, n) => this.refused.unplacedOf(pg, n),
        ...(routes && { lrpWritten: routes.lrpWritten.bind(routes) }),
        job: (key) => this.jobReflector.get(key)?.job,
        podsOfJob: (ns, name) => this.pods.podsOfJob(ns, name),
        workloadCounts: () => ({
          deployments: this.deploymentReflector.size,
          statefulsets: this.statefulSetReflector.size,
        }),
      },
      token,
    );
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
    this.refused.stop();
    const flushed = this.flusher.stop();
    await Promise.all(this.reflectors().map(([, r]) => r.stop()));
    await flushed;
  }

  /** After Redis lost the cache (or on request): relists every kind, then writes the cache whole. */
  async relist(token: number): Promise<void> {
    this.flusher.fence(token);
    await Promise.all(this.reflectors().map(([, r]) => r.relist('Redis lost the cache')));
    await this.rewriteInstances();
    for (const key of this.jobReflector.keys()) this.flusher.markJob(key);
  }

  /** What the cache holds now: workloads of each kind and app pods (instances). */
  counts(): { deployments: number; statefulsets: number; pods: number } {
    return {
      deployments: this.deploymentReflector.size,
      statefulsets: this.statefulSetReflector.size,
      pods: this.pods.appPodCount,
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
    await this.flusher.settled();
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
    return this.pods.podsOfJob(namespace, name);
  }

  async rewriteInstances(options: RewriteOptions = {}): Promise<{ pods: number }> {
    return (await this.flusher.rewriteInstances(options)) ?? { pods: this.pods.appPodCount };
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
    for (const key of this.jobReflector.keys()) this.flusher.markJob(key);
    this.flusher.open();
  }

  private podSeen(s: ManagedPodSummary): void {
    this.pods.add(s);
    if (s.kind === 'app') {
      this.flusher.markLrp(s.processGuid, s.changedAtS === undefined ? undefined : s.changedAtS * 1000);
    } else {
      this.flusher.markJob(jobPodKey(s.pod));
    }
  }

  private podGone(s: ManagedPodSummary | undefined, changedAt?: number): void {
    if (!s) return;
    this.pods.remove(s);
    if (s.kind === 'app') this.flusher.markLrp(s.processGuid, changedAt);
  }

  /** A workload event: a deletion or someone else's spec change is repaired; a held-up rollout checked. */
  private workloadSeen(next: WorkloadSummary | undefined, prev: WorkloadSummary | undefined): void {
    this.refused.workloadSeen(next, prev);
    const held = next ?? prev;
    if (held && this.routes?.workloadSeen(next, prev)) this.flusher.markLrp(held.processGuid, undefined);
    const drift = workloadDrift(prev, next);
    if (drift && held) {
      this.flusher.markDrifted(held.processGuid, `watch-${drift === 'deleted' ? 'd' : 'e'}${held.rv}`);
    }
    // Only a StatefulSet's rollout can be held up: a Deployment's status events gather no pods.
    if (next?.kind === 'statefulset' && rolloutHeldUp(next, this.pods.podsOf(next.processGuid))) {
      this.markHeldUp(next);
    }
  }

  /** A StatefulSet pod of an older revision, not ready: its rollout is held up (rollout.ts). */
  private checkRollout(key: string, pod: AppPodSummary): void {
    if (pod.ordinal === undefined || pod.state === 'RUNNING') return;
    // A StatefulSet's pod is named `<statefulset>-<ordinal>`, in its namespace (so keyed alike).
    const sts = this.statefulSetReflector.get(key.slice(0, key.lastIndexOf('-')));
    if (sts?.processGuid === pod.processGuid && rolloutHeldUp(sts, [pod])) this.markHeldUp(sts);
  }

  private markHeldUp(sts: WorkloadSummary): void {
    if (sts.generation !== undefined) this.flusher.markHeldUp(sts.processGuid, sts.generation);
  }
}
