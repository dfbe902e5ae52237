/**
 * The service's Prometheus metrics: one registry per process (never prom-client's global one, so tests
 * can run several API and worker instances in one process), with Node's process metrics and typed
 * instruments for what the service does.
 *
 * Label values are bounded by construction: routes are Express patterns, queues and job names come from
 * the registry, Kubernetes resources are the adapter's plural names. No guid ever becomes a label.
 *
 * Queue depth and the cache's age live in Redis, shared by every process: they are read when scraped
 * (one round trip per queue, bounded in time), so every process reports the same value; aggregate them
 * with max(), not sum().
 */
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import { withTimeout } from './health.js';

export const METRIC_PREFIX = 'opi_';

/** The queue states reported as `opi_queue_depth{state}`. */
export const QUEUE_STATES = ['waiting', 'active', 'delayed', 'failed', 'completed'] as const;
export type QueueState = (typeof QUEUE_STATES)[number];

export type JobOutcome = 'completed' | 'failed' | 'retried';
export type CallbackKind = 'task' | 'staging' | 'crash';
/**
 * `refused`: CC answered 4xx and will never take it; `window_passed`: still not delivered when its retry
 * window ended; `gave_up`: it can never be sent (e.g. a callback URL that cannot work).
 */
export type CallbackFailure = 'refused' | 'window_passed' | 'gave_up';

const CALLBACK_KINDS: readonly CallbackKind[] = ['task', 'staging', 'crash'];
const CALLBACK_FAILURES: readonly CallbackFailure[] = ['refused', 'window_passed', 'gave_up'];

/** What BullMQ's Queue offers for depth (structural, so this package needs neither BullMQ nor Redis). */
export interface QueueCountsSource {
  getJobCounts(...types: QueueState[]): Promise<Record<string, number>>;
}

export interface CacheFacts {
  syncedAt: number;
  deployments: number;
  statefulsets: number;
  pods: number;
}

/** What StateStore offers for the cache's age. */
export interface CacheMetaSource {
  cacheMeta(): Promise<CacheFacts | undefined>;
}

/** One Kubernetes HTTP request, as the adapter's `onCall` hook reports it. */
export interface KubeCallObservation {
  verb: string;
  resource: string;
  status: number | 'error';
  durationMs: number;
}

export interface MetricSources {
  /** Queues by name; their depth is read on every scrape. */
  queues: Record<string, QueueCountsSource>;
  /** The queue of reports to CC, whose waiting + delayed jobs are `opi_callbacks_pending`. */
  callbackQueue: string;
  store: CacheMetaSource;
  /** Whether Redis is connected; when not, a scrape does not wait for it at all. */
  connected?: () => boolean;
}

export interface MetricsOptions {
  /** Longest a scrape waits for Redis (default 2 s); past it the Redis-backed series are left out. */
  collectTimeoutMs?: number;
  /** Node's process metrics (default true). */
  defaultMetrics?: boolean;
}

export const DEFAULT_COLLECT_TIMEOUT_MS = 2000;

const HTTP_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];
const JOB_BUCKETS = [0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300];
const KUBE_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];
const SYNC_BUCKETS = [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300];
const ATTEMPT_BUCKETS = [1, 2, 3, 5, 10, 15, 25, 50, 100];

/**
 * One Redis read shared by every collector of a scrape (and by concurrent scrapes), bounded in time.
 * While a read is still pending (Redis slow or away) no second one is sent, so a hung connection never
 * accumulates reads, one per scrape. Resolves undefined when it failed or took too long.
 */
function sharedRead<T>(
  read: () => Promise<T>,
  timeoutMs: number,
  what: string,
  onError: () => void,
): () => Promise<T | undefined> {
  let pending: Promise<T> | undefined;
  let round: Promise<T | undefined> | undefined;
  return () => {
    if (!round) {
      pending ??= read().finally(() => {
        pending = undefined;
      });
      round = withTimeout(pending, timeoutMs, what)
        .catch(() => {
          onError();
          return undefined;
        })
        .finally(() => {
          round = undefined;
        });
    }
    return round;
  };
}

export class OpiMetrics {
  readonly registry: Registry;

  /** Requests by Express route pattern (`unmatched` when no route took it), method and status. */
  readonly httpRequests: Counter<'method' | 'route' | 'status'>;
  readonly httpDuration: Histogram<'method' | 'route' | 'status'>;

  /** Job attempts that ended: completed, failed for good, or failed and retried. */
  readonly jobs: Counter<'queue' | 'name' | 'outcome'>;
  readonly jobDuration: Histogram<'queue' | 'name' | 'outcome'>;
  /** Attempts a job took, observed once when it completes or fails for good. */
  readonly jobAttempts: Histogram<'queue' | 'name' | 'outcome'>;
  readonly queueDepth: Gauge<'queue' | 'state'>;

  readonly kubeRequests: Counter<'verb' | 'resource' | 'status'>;
  readonly kubeDuration: Histogram<'verb' | 'resource'>;

  readonly syncDuration: Histogram;
  readonly lastSync: Gauge;
  readonly cacheAge: Gauge;
  readonly cacheObjects: Gauge<'kind'>;
  /** Watch events applied to the cache, by kind (deployments, pods, jobs) and type (ADDED, …, BOOKMARK). */
  readonly watchEvents: Counter<'kind' | 'type'>;
  /** Full lists, by kind and reason (start, expired, requested). */
  readonly watchRelists: Counter<'kind' | 'reason'>;
  /** Watches begun again, by kind and why the last one ended (timeout, closed, error, expired). */
  readonly watchRestarts: Counter<'kind' | 'reason'>;
  /** From an object's change (its own timestamps, whole seconds) to the cache write that shows it. */
  readonly cacheWriteLag: Histogram<'kind'>;
  /** 1 in the process that holds the cache writer's Lease. */
  readonly cacheWriter: Gauge;

  readonly callbacksPending: Gauge;
  readonly callbacksFailed: Counter<'kind' | 'reason'>;

  /** gorouter registrations (instance × route port) the emitter keeps alive; 0 where it does not emit. */
  readonly routingEndpoints: Gauge;
  readonly routingMessages: Counter<'subject'>;
  /** 1 while this process's NATS connection is up (routing on). */
  readonly routingNatsConnected: Gauge;
  /** How often every registration is sent again: the smallest interval gorouters asked for, else 20 s. */
  readonly routingRegisterInterval: Gauge;
  /** From a pod's change (its own timestamps, whole seconds) to the message that tells gorouter. */
  readonly routingLag: Histogram;

  /** Scrapes that could not read Redis in time: their Redis-backed series are missing. */
  readonly collectErrors: Counter<'source'>;

  /** Converges the cluster refused for good, by what the refusal was (the worker's RefusalKind). */
  readonly desireRefused: Counter<'reason'>;

  /** Writes the API refused with 503 because the queue they would add to was full (back-pressure). */
  readonly backpressureRejections: Counter<'queue'>;
  /** Requests the API refused with 429: a client over OPI_RATE_LIMIT_PER_MINUTE. */
  readonly rateLimited: Counter;

  private sources: MetricSources | undefined;
  private readonly readQueues: () => Promise<Map<string, Record<string, number>> | undefined>;
  /** null: never synced; undefined: unknown (not watched, or Redis did not answer in time). */
  private readonly readCacheMeta: () => Promise<CacheFacts | null | undefined>;

  constructor(options: MetricsOptions = {}) {
    this.registry = new Registry();
    const registers = [this.registry];
    if (options.defaultMetrics ?? true)
      collectDefaultMetrics({ register: this.registry, prefix: METRIC_PREFIX });
    const timeoutMs = options.collectTimeoutMs ?? DEFAULT_COLLECT_TIMEOUT_MS;
    const name = (n: string) => `${METRIC_PREFIX}${n}`;

    this.httpRequests = new Counter({
      name: name('http_requests_total'),
      help: 'HTTP requests answered, by method, Express route pattern and status',
      labelNames: ['method', 'route', 'status'],
      registers,
    });
    this.httpDuration = new Histogram({
      name: name('http_request_duration_seconds'),
      help: 'Time from receiving a request to the end of its answer',
      labelNames: ['method', 'route', 'status'],
      buckets: HTTP_BUCKETS,
      registers,
    });

    this.jobs = new Counter({
      name: name('jobs_total'),
      help: 'Job attempts that ended, by queue, job name and outcome (completed, failed for good, retried)',
      labelNames: ['queue', 'name', 'outcome'],
      registers,
    });
    this.jobDuration = new Histogram({
      name: name('job_duration_seconds'),
      help: 'Time one job attempt ran, by queue, job name and outcome',
      labelNames: ['queue', 'name', 'outcome'],
      buckets: JOB_BUCKETS,
      registers,
    });
    this.jobAttempts = new Histogram({
      name: name('job_attempts'),
      help: 'Attempts a job took, observed when it completed or failed for good',
      labelNames: ['queue', 'name', 'outcome'],
      buckets: ATTEMPT_BUCKETS,
      registers,
    });
    this.collectErrors = new Counter({
      name: name('metrics_collect_errors_total'),
      help: 'Scrapes whose Redis-backed series could not be read in time (left out, or NaN)',
      labelNames: ['source'],
      registers,
      // Collectors run side by side: wait for this scrape's reads, so a failure shows in the same scrape.
      collect: async () => {
        await Promise.all([this.readQueues(), this.readCacheMeta()]);
      },
    });
    for (const source of ['queues', 'sync']) this.collectErrors.inc({ source }, 0);
    this.readQueues = sharedRead(
      () => this.fetchQueueCounts(),
      timeoutMs,
      'queue depth',
      () => {
        this.collectErrors.inc({ source: 'queues' });
      },
    );
    this.readCacheMeta = sharedRead(
      async () => {
        const sources = this.connectedSources();
        return sources ? ((await sources.store.cacheMeta()) ?? null) : undefined;
      },
      timeoutMs,
      'sync state',
      () => {
        this.collectErrors.inc({ source: 'sync' });
      },
    );

    const readQueues = this.readQueues;
    this.queueDepth = new Gauge({
      name: name('queue_depth'),
      help: 'Jobs in each queue by state, read from Redis when scraped (the same in every process)',
      labelNames: ['queue', 'state'],
      registers,
      async collect() {
        const counts = await readQueues();
        this.reset();
        for (const [queue, byState] of counts ?? []) {
          for (const state of QUEUE_STATES) this.set({ queue, state }, byState[state] ?? 0);
        }
      },
    });
    const callbackQueue = () => this.sources?.callbackQueue;
    this.callbacksPending = new Gauge({
      name: name('callbacks_pending'),
      help: 'Reports to CC not yet delivered: waiting and delayed (retrying) callback jobs; NaN: Redis did not answer',
      registers,
      async collect() {
        const counts = (await readQueues())?.get(callbackQueue() ?? '');
        this.set(counts ? (counts['waiting'] ?? 0) + (counts['delayed'] ?? 0) : NaN);
      },
    });
    this.callbacksFailed = new Counter({
      name: name('callbacks_failed_total'),
      help: 'Reports to CC that will never be delivered: refused by CC (4xx), undelivered when their retry window ended, or unsendable',
      labelNames: ['kind', 'reason'],
      registers,
    });
    // Known from the start, so rate() and alerts see a 0 rather than no series before the first failure.
    for (const kind of CALLBACK_KINDS)
      for (const reason of CALLBACK_FAILURES) this.callbacksFailed.inc({ kind, reason }, 0);

    this.desireRefused = new Counter({
      name: name('desire_refused_total'),
      help: 'Converges of a desired LRP the cluster refused for good (422 invalid, 403 quota or forbidden, ...), by reason',
      labelNames: ['reason'],
      registers,
    });

    this.backpressureRejections = new Counter({
      name: name('backpressure_rejections_total'),
      help: 'Writes refused with 503 because the queue they would add to held OPI_MAX_QUEUE_DEPTH jobs',
      labelNames: ['queue'],
      registers,
    });
    this.rateLimited = new Counter({
      name: name('rate_limited_total'),
      help: 'Requests refused with 429: a client over OPI_RATE_LIMIT_PER_MINUTE on this API process',
      registers,
    });

    this.kubeRequests = new Counter({
      name: name('kube_requests_total'),
      help: 'Kubernetes API requests by verb, resource and HTTP status ("error": no answer)',
      labelNames: ['verb', 'resource', 'status'],
      registers,
    });
    this.kubeDuration = new Histogram({
      name: name('kube_request_duration_seconds'),
      help: 'Kubernetes API request latency, on the wire (one observation per page of a list)',
      labelNames: ['verb', 'resource'],
      buckets: KUBE_BUCKETS,
      registers,
    });

    this.syncDuration = new Histogram({
      name: name('sync_duration_seconds'),
      help: 'Time one sync took (cache rewrite and reconciling, from the watched state)',
      buckets: SYNC_BUCKETS,
      registers,
    });
    // A series without labels cannot be left out, so these say "unknown" (Redis did not answer) with
    // NaN, and "never synced" with 0 and +Inf, so that an alert on the age fires before the first sync.
    const readCacheMeta = this.readCacheMeta;
    this.lastSync = new Gauge({
      name: name('sync_last_success_timestamp_seconds'),
      help: 'When the last sync wrote the cache (Unix seconds); 0: never, NaN: Redis did not answer',
      registers,
      async collect() {
        const meta = await readCacheMeta();
        this.set(meta === undefined ? NaN : meta === null ? 0 : meta.syncedAt / 1000);
      },
    });
    this.cacheAge = new Gauge({
      name: name('cache_age_seconds'),
      help: 'Age of the instances cache the API answers from; +Inf: never synced, NaN: Redis did not answer',
      registers,
      async collect() {
        const meta = await readCacheMeta();
        // Another process' clock wrote syncedAt; a little skew must not show as a negative age.
        this.set(
          meta === undefined
            ? NaN
            : meta === null
              ? Infinity
              : Math.max(0, Date.now() - meta.syncedAt) / 1000,
        );
      },
    });
    this.watchEvents = new Counter({
      name: name('watch_events_total'),
      help: 'Watch events applied to the cache, by kind and event type',
      labelNames: ['kind', 'type'],
      registers,
    });
    this.watchRelists = new Counter({
      name: name('watch_relists_total'),
      help: 'Full lists of a kind, by reason (start, expired: 410 Gone, requested: Redis lost the cache)',
      labelNames: ['kind', 'reason'],
      registers,
    });
    this.watchRestarts = new Counter({
      name: name('watch_restarts_total'),
      help: 'Watches begun again, by kind and why the previous one ended',
      labelNames: ['kind', 'reason'],
      registers,
    });
    this.cacheWriteLag = new Histogram({
      name: name('cache_write_lag_seconds'),
      help: "From an object's change (its timestamps, whole seconds) to the cache write showing it",
      labelNames: ['kind'],
      buckets: [0.05, 0.1, 0.25, 0.5, 1, 2, 3, 5, 10, 30, 60],
      registers,
    });
    this.routingEndpoints = new Gauge({
      name: name('routing_registered_endpoints'),
      help: 'gorouter registrations (instance and route port) this process keeps registered over NATS',
      registers,
    });
    this.routingMessages = new Counter({
      name: name('routing_messages_published_total'),
      help: 'NATS messages published for routing, by subject',
      labelNames: ['subject'],
      registers,
    });
    this.routingNatsConnected = new Gauge({
      name: name('routing_nats_connected'),
      help: "1 while this process's NATS connection is up (OPI_ROUTING=nats)",
      registers,
    });
    this.routingRegisterInterval = new Gauge({
      name: name('routing_register_interval_seconds'),
      help: 'How often every registration is sent again (the smallest minimumRegisterIntervalInSeconds of the gorouters, else 20)',
      registers,
    });
    this.routingLag = new Histogram({
      name: name('routing_publish_lag_seconds'),
      help: "From a pod's change (its own timestamps, whole seconds) to the NATS message telling gorouter",
      buckets: [0.25, 0.5, 1, 2, 5, 10, 30],
      registers,
    });
    this.cacheWriter = new Gauge({
      name: name('cache_writer'),
      help: "1 when this process holds the cache writer's Lease (watches the cluster, writes the cache)",
      registers,
    });
    this.cacheObjects = new Gauge({
      name: name('cache_objects'),
      help: 'Workloads (by kind) and pods in the cache when it was last written whole',
      labelNames: ['kind'],
      registers,
      async collect() {
        const meta = await readCacheMeta();
        this.reset();
        if (meta) {
          this.set({ kind: 'deployments' }, meta.deployments);
          this.set({ kind: 'statefulsets' }, meta.statefulsets);
          this.set({ kind: 'pods' }, meta.pods);
        }
      },
    });
  }

  /**
   * Where queue depth and the cache's age are read from. Returns a function that forgets them again
   * (e.g. when the queues close). The last call wins: in the one-process server API and workers share
   * one registry and the same Redis.
   */
  watch(sources: MetricSources): () => void {
    this.sources = sources;
    return () => {
      if (this.sources === sources) this.sources = undefined;
    };
  }

  /** The sources, if any; throws when their Redis is known to be away (counted as a collect error). */
  private connectedSources(): MetricSources | undefined {
    const sources = this.sources;
    if (sources?.connected && !sources.connected()) throw new Error('redis is not connected');
    return sources;
  }

  private async fetchQueueCounts(): Promise<Map<string, Record<string, number>> | undefined> {
    const sources = this.connectedSources();
    if (!sources) return undefined;
    const entries = await Promise.all(
      Object.entries(sources.queues).map(async ([queue, q]): Promise<[string, Record<string, number>]> => [
        queue,
        await q.getJobCounts(...QUEUE_STATES),
      ]),
    );
    return new Map(entries);
  }

  /** For the Kubernetes adapter's `onCall` hook (bound, so it can be passed as it is). */
  readonly observeKubeCall = (call: KubeCallObservation): void => {
    this.kubeRequests.inc({ verb: call.verb, resource: call.resource, status: String(call.status) });
    this.kubeDuration.observe({ verb: call.verb, resource: call.resource }, call.durationMs / 1000);
  };

  observeHttpRequest(method: string, route: string, status: string, durationMs: number): void {
    const labels = { method, route, status };
    this.httpRequests.inc(labels);
    this.httpDuration.observe(labels, durationMs / 1000);
  }

  /**
   * One job attempt ended. `attempts` (attempts made so far) is observed only when the job is done for
   * good: completed or failed without another retry.
   */
  observeJob(queue: string, name: string, outcome: JobOutcome, durationMs: number, attempts: number): void {
    const labels = { queue, name, outcome };
    this.jobs.inc(labels);
    this.jobDuration.observe(labels, Math.max(0, durationMs) / 1000);
    if (outcome !== 'retried') this.jobAttempts.observe(labels, attempts);
  }

  observeCallbackFailure(kind: CallbackKind, reason: CallbackFailure): void {
    this.callbacksFailed.inc({ kind, reason });
  }

  /** `by` 0 makes the series known before the first refusal (the worker does so for every reason). */
  observeDesireRefused(reason: string, by = 1): void {
    this.desireRefused.inc({ reason }, by);
  }

  observeSync(durationMs: number): void {
    this.syncDuration.observe(durationMs / 1000);
  }

  /** The Prometheus text exposition, and its content type. */
  async expose(): Promise<{ contentType: string; body: string }> {
    return { contentType: this.registry.contentType, body: await this.registry.metrics() };
  }
}

export function createMetrics(options: MetricsOptions = {}): OpiMetrics {
  return new OpiMetrics(options);
}
