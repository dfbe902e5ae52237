/**
 * Every setting of the service, read from the environment once at start-up and validated: a bad value
 * stops the process with a message naming the variable, instead of surfacing later. Nothing else in the
 * code reads process.env. The settings table of docs/operations.md lists the same names and defaults.
 */
import { DNS_LABEL, WORKLOAD_KINDS, type WorkloadKind } from '@opi/domain';
import { z } from 'zod';

const bool = z
  .enum(['true', 'false', '1', '0', 'yes', 'no'])
  .transform((v) => v === 'true' || v === '1' || v === 'yes');
const int = (min: number, max: number) => z.coerce.number().int().min(min).max(max);

/** `host:port,host:port` (IPv6 hosts in brackets), e.g. the seeds of a Redis Cluster. */
const hostPorts = z.string().transform((text, ctx) => {
  const out: HostPort[] = [];
  for (const item of text.split(',').map((s) => s.trim())) {
    const m = /^(\[[0-9a-fA-F:.]+\]|[^\s:[\]]+):(\d{1,5})$/.exec(item);
    const port = Number(m?.[2]);
    if (!m?.[1] || !(port >= 1 && port <= 65535)) {
      ctx.addIssue({ code: 'custom', message: `"${item}" is not host:port` });
      return z.NEVER;
    }
    out.push({ host: m[1].replace(/^\[|\]$/g, ''), port });
  }
  return out;
});

/** `nats://[user:pass@]host:port`, comma-separated: several servers of one NATS cluster. */
const natsUrls = z.string().transform((text, ctx) => {
  const out: NatsServer[] = [];
  for (const item of text.split(',').map((s) => s.trim())) {
    let u: URL | undefined;
    try {
      u = new URL(item);
    } catch {
      u = undefined;
    }
    // The item itself is never echoed: it may carry a password.
    if (!u || u.protocol !== 'nats:' || !u.hostname || u.pathname.replace(/^\/$/, '') !== '') {
      ctx.addIssue({
        code: 'custom',
        message: `server ${out.length + 1} is not nats://[user:pass@]host:port`,
      });
      return z.NEVER;
    }
    out.push({
      server: `${u.hostname}:${u.port || '4222'}`,
      ...(u.username ? { user: decodeURIComponent(u.username) } : {}),
      ...(u.password ? { pass: decodeURIComponent(u.password) } : {}),
    });
  }
  return out;
});

const schema = z.object({
  PORT: int(0, 65535).default(8080),
  HOST: z.string().min(1).default('127.0.0.1'),
  /** Bearer tokens CC's OPI client may send (comma-separated); any one of them is accepted. */
  OPI_API_TOKENS: z
    .string()
    .regex(/^[^\s,]+(,[^\s,]+)*$/, 'must be comma-separated tokens without spaces')
    .optional(),
  /** The API's certificate and key: it listens with https when both are set. */
  OPI_TLS_CERT_FILE: z.string().optional(),
  OPI_TLS_KEY_FILE: z.string().optional(),
  /** CA of the client certificates the API then requires (mutual TLS, as CC's OPI client does). */
  OPI_TLS_CLIENT_CA_FILE: z.string().optional(),
  /** Listen on a non-loopback HOST without tokens or mutual TLS (anyone who reaches it can drive the cluster). */
  OPI_ALLOW_INSECURE: bool.default(false),
  /** The queue dashboard (/admin/queues) and its HTTP Basic credentials; off when unset. */
  OPI_DASHBOARD_USERNAME: z
    .string()
    .regex(/^[^:]+$/, 'must not contain ":"')
    .optional(),
  OPI_DASHBOARD_PASSWORD: z.string().optional(),
  OPI_DASHBOARD_READ_ONLY: bool.default(false),
  /** A separate port for the dashboard, metrics and health (then not served on PORT). */
  OPI_ADMIN_PORT: int(0, 65535).optional(),
  REDIS_URL: z
    .string()
    .regex(/^rediss?:\/\//, 'must be a redis:// or rediss:// URL')
    .default('redis://127.0.0.1:6379'),
  /** Redis Cluster instead of REDIS_URL: seed nodes; every key then needs the prefix's hash tag ({opi}). */
  REDIS_CLUSTER_NODES: hostPorts.optional(),
  /** Redis Sentinel instead of REDIS_URL: the sentinels, and the name of the master they watch. */
  REDIS_SENTINELS: hostPorts.optional(),
  REDIS_SENTINEL_NAME: z.string().min(1).default('mymaster'),
  REDIS_SENTINEL_PASSWORD: z.string().optional(),
  /** Credentials and TLS of every Redis node, whichever of the three ways it is reached. */
  REDIS_USERNAME: z.string().optional(),
  REDIS_PASSWORD: z.string().optional(),
  REDIS_TLS: bool.default(false),
  KUBECONFIG: z.string().optional(),
  /** Set by Kubernetes in every pod: the in-cluster configuration is available. */
  KUBERNETES_SERVICE_HOST: z.string().optional(),
  OPI_NAMESPACE: z.string().regex(DNS_LABEL, 'must be a DNS-1123 label').default('cf-workloads'),
  /** false: workloads are watched in OPI_NAMESPACE only, so a namespaced Role suffices (k8s/). */
  OPI_SYNC_ALL_NAMESPACES: bool.default(true),
  /** Namespaces a request may name besides OPI_NAMESPACE: comma-separated DNS labels, or `*` for any. */
  OPI_ALLOWED_NAMESPACES: z
    .string()
    .default('')
    .transform((v) =>
      v
        .split(',')
        .map((n) => n.trim())
        .filter((n) => n !== ''),
    )
    .refine(
      (list) => (list.length === 1 && list[0] === '*') || list.every((n) => DNS_LABEL.test(n)),
      'must be `*` or comma-separated DNS-1123 labels',
    ),
  OPI_QUEUE_PREFIX: z
    .string()
    .min(1)
    .max(64)
    .regex(/^[^:\s]+$/, 'must not contain ":" or spaces')
    .default('opi'),
  /** How often the sync reconciles drift from the watched state (the cache itself follows the watch). */
  OPI_RESYNC_INTERVAL_MS: int(500, 24 * 3_600_000).default(600_000),
  /** The Lease (in OPI_NAMESPACE) whose holder watches the cluster and writes the cache. */
  OPI_LEASE_NAME: z.string().regex(DNS_LABEL, 'must be a DNS-1123 label').default('opi-cache-writer'),
  /** The Lease's duration, renew deadline and retry period (client-go's 15 s, 10 s, 2 s). */
  OPI_LEASE_DURATION_MS: int(1000, 600_000).default(15_000),
  OPI_LEASE_RENEW_DEADLINE_MS: int(500, 600_000).default(10_000),
  OPI_LEASE_RETRY_PERIOD_MS: int(100, 60_000).default(2000),
  OPI_WORKER_CONCURRENCY: int(1, 1000).default(16),
  OPI_JOB_ATTEMPTS: int(1, 100).default(10),
  /** A job whose worker stops renewing its lock for this long is taken again by another worker. */
  OPI_JOB_LOCK_MS: int(1000, 600_000).default(30_000),
  OPI_RUN_AS_NON_ROOT: bool.default(true),
  /** What a new LRP runs as; an existing one keeps its kind (see docs/operations.md: which to choose). */
  OPI_WORKLOAD_KIND: z.enum(WORKLOAD_KINDS).default('deployment'),
  /** StatefulSets tell each instance its index (needs Kubernetes ≥ 1.28); off: everything else of the mode. */
  OPI_INSTANCE_INDEX_ENV: z
    .enum(['on', 'off', 'true', 'false', '1', '0', 'yes', 'no'])
    .default('on')
    .transform((v) => v === 'on' || v === 'true' || v === '1' || v === 'yes'),
  OPI_DROPLET_REGISTRY: z.string().min(1).max(253).default('registry.cf.internal'),
  OPI_BODY_LIMIT_BYTES: int(1024, 64 * 1024 * 1024).default(1024 * 1024),
  /** Requests one client may make to CC's routes per minute, per API replica; 0: no limit. */
  OPI_RATE_LIMIT_PER_MINUTE: int(0, 100_000_000).default(120_000),
  /** Writes are refused (503) while the queue they would add to holds this many waiting jobs; 0: never. */
  OPI_MAX_QUEUE_DEPTH: int(0, 100_000_000).default(150_000),
  /** Time given to one Kubernetes API request, answer body included. */
  OPI_KUBE_TIMEOUT_MS: int(100, 600_000).default(30_000),
  /** Kubernetes API requests one worker process has in flight at once; more wait their turn. */
  OPI_KUBE_MAX_CONCURRENT_REQUESTS: int(1, 1000).default(32),
  OPI_SHUTDOWN_TIMEOUT_MS: int(0, 600_000).default(25_000),
  /** CC's internal API, where crash reports go (e.g. https://cloud-controller-ng.service.cf.internal:9023). */
  CC_INTERNAL_URL: z.url({ protocol: /^https?$/ }).optional(),
  /** Mutual TLS towards CC (its internal API asks for a client certificate). */
  OPI_CC_CA_FILE: z.string().optional(),
  OPI_CC_CERT_FILE: z.string().optional(),
  OPI_CC_KEY_FILE: z.string().optional(),
  /** No longer read (a report's tries end with its retry window): refused at start, so it is not ignored. */
  OPI_CALLBACK_ATTEMPTS: z.string().optional(),
  /** First retry delay of a report to CC; it doubles on every try (with jitter) up to the maximum. */
  OPI_CALLBACK_BACKOFF_MS: int(10, 600_000).default(2000),
  /** The longest delay between two tries of a report: how long one waits after CC is back. */
  OPI_CALLBACK_MAX_DELAY_MS: int(10, 3_600_000).default(30_000),
  /** How long a report is retried from when it was first enqueued; still undelivered then, it fails for good. */
  OPI_CALLBACK_RETRY_WINDOW_MS: int(100, 30 * 24 * 3_600_000).default(24 * 3_600_000),
  OPI_CALLBACK_TIMEOUT_MS: int(100, 600_000).default(10_000),
  /** Image that stages buildpack apps (it writes its result to the termination message). */
  OPI_STAGING_RECIPE_IMAGE: z.string().min(1).max(1024).default('cloudfoundry/opi-buildpack-stager:latest'),
  /** Registries reached over plain http when reading docker image configs (comma-separated hosts). */
  OPI_INSECURE_REGISTRIES: z.string().default(''),
  /** How long a finished, reported task or staging Job is kept before it is deleted. */
  OPI_FINISHED_JOB_TTL_SECONDS: int(0, 30 * 24 * 3600).default(600),
  /** The worker's /metrics, /healthz and /readyz port (on HOST); 0: not served. */
  OPI_METRICS_PORT: int(0, 65535).default(9090),
  /** How CF apps are reached at their routes: off, or registered with gorouter over NATS. */
  OPI_ROUTING: z.enum(['off', 'nats']).default('off'),
  OPI_NATS_URL: natsUrls.optional(),
  OPI_NATS_TLS_CA_FILE: z.string().optional(),
  OPI_NATS_TLS_CERT_FILE: z.string().optional(),
  OPI_NATS_TLS_KEY_FILE: z.string().optional(),
  /** A Loggregator v2 ingress (an agent at 127.0.0.1:3458, or doppler:8082) for app logs; unset: none sent. */
  OPI_LOGGREGATOR_ADDR: hostPorts.optional(),
  OPI_LOGGREGATOR_CA_FILE: z.string().optional(),
  OPI_LOGGREGATOR_CERT_FILE: z.string().optional(),
  OPI_LOGGREGATOR_KEY_FILE: z.string().optional(),
  /** The name the ingress's certificate is checked against (go-loggregator's `metron`). */
  OPI_LOGGREGATOR_SERVER_NAME: z.string().min(1).max(253).default('metron'),
  /** Envelopes held while Loggregator is away or slow; beyond, the oldest are dropped (and counted). */
  OPI_LOGGREGATOR_MAX_BUFFERED: int(100, 10_000_000).default(10_000),
  /** The log agent's node (the DaemonSet sets it from spec.nodeName); it tails only this node's pods. */
  OPI_NODE_NAME: z.string().min(1).max(253).optional(),
  /** The kubelet's pod log root the log agent tails. */
  OPI_POD_LOG_DIR: z.string().min(1).default('/var/log/pods'),
  /** Where the log agent keeps its read positions across restarts (a node-local path). */
  OPI_LOG_POSITIONS_FILE: z.string().min(1).default('/var/lib/opi-log-agent/positions.json'),
  LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
});

export type Env = z.infer<typeof schema>;

export interface Settings {
  http: { port: number; host: string; bodyLimitBytes: number };
  /** What the API refuses to protect itself and Redis; 0 turns a limit off. */
  limits: { ratePerMinute: number; maxQueueDepth: number };
  /** The workers' Kubernetes client (libs/kube's adapter). */
  kube: { timeoutMs: number; maxConcurrentRequests: number };
  /** Who may call the CC routes; see apps/api/src/security.ts. */
  security: {
    apiTokens: string[];
    /** https when set; client certificates are required when clientCaFile is set. */
    tls: { certFile: string; keyFile: string; clientCaFile?: string } | undefined;
    allowInsecure: boolean;
    /** Port of the dashboard, metrics and health when they are not served on the API's port. */
    adminPort: number | undefined;
  };
  dashboard: { username: string; password: string; readOnly: boolean } | undefined;
  redisUrl: string;
  redis: RedisSettings;
  kubeconfig: string | undefined;
  inCluster: boolean;
  namespace: string;
  /** Namespaces requests may name besides `namespace`; 'any': every one. */
  allowedNamespaces: readonly string[] | 'any';
  /** Whether the service watches every namespace (needs cluster-wide rights) or only `namespace`. */
  syncAllNamespaces: boolean;
  queuePrefix: string;
  /** The sync's period: drift reconciled from the watched state. */
  resyncIntervalMs: number;
  lease: { name: string; durationMs: number; renewDeadlineMs: number; retryPeriodMs: number };
  worker: { concurrency: number; attempts: number; lockMs: number };
  runAsNonRoot: boolean;
  /** What new LRPs run as, and whether a StatefulSet's containers are told their index. */
  workloads: { kind: WorkloadKind; instanceIndexEnv: boolean };
  dropletRegistry: string;
  shutdownTimeoutMs: number;
  logLevel: Env['LOG_LEVEL'];
  cc: {
    internalUrl: string | undefined;
    tls: { caFile?: string; certFile?: string; keyFile?: string };
    /** How reports are retried (@opi/queue's callback-retry.ts). */
    retry: { firstDelayMs: number; maxDelayMs: number; windowMs: number };
    timeoutMs: number;
  };
  staging: { recipeImage: string; insecureRegistries: string[] };
  finishedJobTtlSeconds: number;
  /** The worker's metrics and health server; port 0: none. */
  metrics: { port: number };
  /** Off, or NATS: every routed instance registered with gorouter (apps/worker/src/routing). */
  routing: RoutingSettings;
  /** Where app, task and staging output and usage go; undefined: nowhere (@opi/loggregator). */
  loggregator: LoggregatorSettings | undefined;
  /** The log agent's side (apps/log-agent): which node, which files, where its positions are kept. */
  nodeLogs: { nodeName: string | undefined; dir: string; positionsFile: string };
}

export interface LoggregatorSettings {
  address: HostPort;
  tls: { caFile?: string; certFile?: string; keyFile?: string };
  serverName: string;
  maxBuffered: number;
}

/** One NATS server, its credentials apart from its address (the address may be logged, they never). */
export interface NatsServer {
  server: string;
  user?: string;
  pass?: string;
}

export type RoutingSettings =
  | { mode: 'off' }
  | {
      mode: 'nats';
      servers: NatsServer[];
      tls: { caFile?: string; certFile?: string; keyFile?: string } | undefined;
    };

export class SettingsError extends Error {}

export interface HostPort {
  host: string;
  port: number;
}

/** How to reach Redis: REDIS_URL, or a Cluster, or the master named by Sentinel (see @opi/queue's factory). */
export interface RedisSettings {
  url: string;
  /** Non-empty: Redis Cluster with these seeds. */
  clusterNodes: HostPort[];
  /** Non-empty: Sentinel, master `sentinelName`. */
  sentinels: HostPort[];
  sentinelName: string;
  sentinelPassword?: string;
  username?: string;
  password?: string;
  tls: boolean;
}

/** A key's hash tag as Redis Cluster reads it: what is between the first `{` and the next `}`, if not empty. */
export function hashTag(key: string): string | undefined {
  const open = key.indexOf('{');
  const close = open < 0 ? -1 : key.indexOf('}', open + 1);
  return close > open + 1 ? key.slice(open + 1, close) : undefined;
}

function redisSettings(e: Env): RedisSettings {
  const cluster = e.REDIS_CLUSTER_NODES ?? [];
  const sentinels = e.REDIS_SENTINELS ?? [];
  if (cluster.length && sentinels.length) {
    throw new SettingsError('invalid settings: set REDIS_CLUSTER_NODES or REDIS_SENTINELS, not both');
  }
  // BullMQ's scripts and ours touch several keys at once; on a Cluster they must share one slot.
  if (cluster.length && hashTag(e.OPI_QUEUE_PREFIX) === undefined) {
    throw new SettingsError(
      'invalid settings: with REDIS_CLUSTER_NODES, OPI_QUEUE_PREFIX must carry a hash tag, e.g. {opi}',
    );
  }
  return {
    url: e.REDIS_URL,
    clusterNodes: cluster,
    sentinels,
    sentinelName: e.REDIS_SENTINEL_NAME,
    ...(e.REDIS_SENTINEL_PASSWORD ? { sentinelPassword: e.REDIS_SENTINEL_PASSWORD } : {}),
    ...(e.REDIS_USERNAME ? { username: e.REDIS_USERNAME } : {}),
    ...(e.REDIS_PASSWORD ? { password: e.REDIS_PASSWORD } : {}),
    tls: e.REDIS_TLS,
  };
}

function routingSettings(e: Env): RoutingSettings {
  if (e.OPI_ROUTING === 'off' || !e.OPI_NATS_URL) return { mode: 'off' };
  const files = {
    ...(e.OPI_NATS_TLS_CA_FILE ? { caFile: e.OPI_NATS_TLS_CA_FILE } : {}),
    ...(e.OPI_NATS_TLS_CERT_FILE ? { certFile: e.OPI_NATS_TLS_CERT_FILE } : {}),
    ...(e.OPI_NATS_TLS_KEY_FILE ? { keyFile: e.OPI_NATS_TLS_KEY_FILE } : {}),
  };
  return { mode: 'nats', servers: e.OPI_NATS_URL, tls: Object.keys(files).length > 0 ? files : undefined };
}

export function parseSettings(env: Record<string, string | undefined>): Settings {
  // Empty strings mean "not set", as in most shells' `VAR= cmd`.
  const cleaned = Object.fromEntries(Object.entries(env).filter(([, v]) => v !== undefined && v !== ''));
  const r = schema.safeParse(cleaned);
  if (!r.success) {
    throw new SettingsError(
      `invalid settings: ${r.error.issues.map((i) => `${i.path.map(String).join('.')}: ${i.message}`).join('; ')}`,
    );
  }
  const e = r.data;
  // Settings that only make sense together: a half-configured TLS or dashboard is a mistake to report,
  // not something to silently ignore.
  const pairs: [string, unknown, string, unknown][] = [
    ['OPI_TLS_CERT_FILE', e.OPI_TLS_CERT_FILE, 'OPI_TLS_KEY_FILE', e.OPI_TLS_KEY_FILE],
    ['OPI_DASHBOARD_USERNAME', e.OPI_DASHBOARD_USERNAME, 'OPI_DASHBOARD_PASSWORD', e.OPI_DASHBOARD_PASSWORD],
    [
      'OPI_LOGGREGATOR_CERT_FILE',
      e.OPI_LOGGREGATOR_CERT_FILE,
      'OPI_LOGGREGATOR_KEY_FILE',
      e.OPI_LOGGREGATOR_KEY_FILE,
    ],
  ];
  for (const [a, va, b, vb] of pairs) {
    if ((va === undefined) !== (vb === undefined)) {
      throw new SettingsError(`invalid settings: ${a} and ${b} must be set together`);
    }
  }
  // As client-go's leader election: a holder must give up before its Lease can pass to another.
  if (
    !(e.OPI_LEASE_RETRY_PERIOD_MS < e.OPI_LEASE_RENEW_DEADLINE_MS) ||
    !(e.OPI_LEASE_RENEW_DEADLINE_MS < e.OPI_LEASE_DURATION_MS)
  ) {
    throw new SettingsError(
      'invalid settings: OPI_LEASE_RETRY_PERIOD_MS < OPI_LEASE_RENEW_DEADLINE_MS < OPI_LEASE_DURATION_MS must hold',
    );
  }
  if (e.OPI_CALLBACK_ATTEMPTS !== undefined) {
    throw new SettingsError(
      'invalid settings: OPI_CALLBACK_ATTEMPTS is no longer read: a report to CC is retried until ' +
        'OPI_CALLBACK_RETRY_WINDOW_MS (default 24 h) has passed since it was enqueued, at most ' +
        'OPI_CALLBACK_MAX_DELAY_MS (default 30 s) apart; remove it (docs/operations.md)',
    );
  }
  if (e.OPI_ROUTING === 'nats' && !e.OPI_NATS_URL) {
    throw new SettingsError('invalid settings: OPI_ROUTING=nats needs OPI_NATS_URL');
  }
  if ((e.OPI_NATS_TLS_CERT_FILE === undefined) !== (e.OPI_NATS_TLS_KEY_FILE === undefined)) {
    throw new SettingsError(
      'invalid settings: OPI_NATS_TLS_CERT_FILE and OPI_NATS_TLS_KEY_FILE must be set together',
    );
  }
  if (e.OPI_TLS_CLIENT_CA_FILE && !e.OPI_TLS_CERT_FILE) {
    throw new SettingsError(
      'invalid settings: OPI_TLS_CLIENT_CA_FILE needs OPI_TLS_CERT_FILE and OPI_TLS_KEY_FILE',
    );
  }
  return Object.freeze({
    http: { port: e.PORT, host: e.HOST, bodyLimitBytes: e.OPI_BODY_LIMIT_BYTES },
    limits: { ratePerMinute: e.OPI_RATE_LIMIT_PER_MINUTE, maxQueueDepth: e.OPI_MAX_QUEUE_DEPTH },
    kube: { timeoutMs: e.OPI_KUBE_TIMEOUT_MS, maxConcurrentRequests: e.OPI_KUBE_MAX_CONCURRENT_REQUESTS },
    security: {
      apiTokens: e.OPI_API_TOKENS ? e.OPI_API_TOKENS.split(',') : [],
      tls:
        e.OPI_TLS_CERT_FILE && e.OPI_TLS_KEY_FILE
          ? {
              certFile: e.OPI_TLS_CERT_FILE,
              keyFile: e.OPI_TLS_KEY_FILE,
              ...(e.OPI_TLS_CLIENT_CA_FILE ? { clientCaFile: e.OPI_TLS_CLIENT_CA_FILE } : {}),
            }
          : undefined,
      allowInsecure: e.OPI_ALLOW_INSECURE,
      adminPort: e.OPI_ADMIN_PORT,
    },
    dashboard:
      e.OPI_DASHBOARD_USERNAME && e.OPI_DASHBOARD_PASSWORD
        ? {
            username: e.OPI_DASHBOARD_USERNAME,
            password: e.OPI_DASHBOARD_PASSWORD,
            readOnly: e.OPI_DASHBOARD_READ_ONLY,
          }
        : undefined,
    redisUrl: e.REDIS_URL,
    redis: redisSettings(e),
    kubeconfig: e.KUBECONFIG,
    inCluster: e.KUBERNETES_SERVICE_HOST !== undefined,
    namespace: e.OPI_NAMESPACE,
    syncAllNamespaces: e.OPI_SYNC_ALL_NAMESPACES,
    allowedNamespaces: e.OPI_ALLOWED_NAMESPACES[0] === '*' ? 'any' : e.OPI_ALLOWED_NAMESPACES,
    queuePrefix: e.OPI_QUEUE_PREFIX,
    resyncIntervalMs: e.OPI_RESYNC_INTERVAL_MS,
    lease: {
      name: e.OPI_LEASE_NAME,
      durationMs: e.OPI_LEASE_DURATION_MS,
      renewDeadlineMs: e.OPI_LEASE_RENEW_DEADLINE_MS,
      retryPeriodMs: e.OPI_LEASE_RETRY_PERIOD_MS,
    },
    worker: {
      concurrency: e.OPI_WORKER_CONCURRENCY,
      attempts: e.OPI_JOB_ATTEMPTS,
      lockMs: e.OPI_JOB_LOCK_MS,
    },
    runAsNonRoot: e.OPI_RUN_AS_NON_ROOT,
    workloads: { kind: e.OPI_WORKLOAD_KIND, instanceIndexEnv: e.OPI_INSTANCE_INDEX_ENV },
    dropletRegistry: e.OPI_DROPLET_REGISTRY,
    shutdownTimeoutMs: e.OPI_SHUTDOWN_TIMEOUT_MS,
    logLevel: e.LOG_LEVEL,
    cc: {
      internalUrl: e.CC_INTERNAL_URL,
      tls: {
        ...(e.OPI_CC_CA_FILE ? { caFile: e.OPI_CC_CA_FILE } : {}),
        ...(e.OPI_CC_CERT_FILE ? { certFile: e.OPI_CC_CERT_FILE } : {}),
        ...(e.OPI_CC_KEY_FILE ? { keyFile: e.OPI_CC_KEY_FILE } : {}),
      },
      retry: {
        firstDelayMs: e.OPI_CALLBACK_BACKOFF_MS,
        maxDelayMs: e.OPI_CALLBACK_MAX_DELAY_MS,
        windowMs: e.OPI_CALLBACK_RETRY_WINDOW_MS,
      },
      timeoutMs: e.OPI_CALLBACK_TIMEOUT_MS,
    },
    staging: {
      recipeImage: e.OPI_STAGING_RECIPE_IMAGE,
      insecureRegistries: e.OPI_INSECURE_REGISTRIES.split(',')
        .map((s) => s.trim())
        .filter(Boolean),
    },
    finishedJobTtlSeconds: e.OPI_FINISHED_JOB_TTL_SECONDS,
    metrics: { port: e.OPI_METRICS_PORT },
    routing: routingSettings(e),
    loggregator: loggregatorSettings(e),
    nodeLogs: { nodeName: e.OPI_NODE_NAME, dir: e.OPI_POD_LOG_DIR, positionsFile: e.OPI_LOG_POSITIONS_FILE },
  });
}

function loggregatorSettings(e: Env): LoggregatorSettings | undefined {
  const addresses = e.OPI_LOGGREGATOR_ADDR ?? [];
  if (addresses.length > 1) throw new SettingsError('OPI_LOGGREGATOR_ADDR takes one host:port');
  const address = addresses[0];
  if (!address) return undefined;
  return {
    address,
    tls: {
      ...(e.OPI_LOGGREGATOR_CA_FILE ? { caFile: e.OPI_LOGGREGATOR_CA_FILE } : {}),
      ...(e.OPI_LOGGREGATOR_CERT_FILE ? { certFile: e.OPI_LOGGREGATOR_CERT_FILE } : {}),
      ...(e.OPI_LOGGREGATOR_KEY_FILE ? { keyFile: e.OPI_LOGGREGATOR_KEY_FILE } : {}),
    },
    serverName: e.OPI_LOGGREGATOR_SERVER_NAME,
    maxBuffered: e.OPI_LOGGREGATOR_MAX_BUFFERED,
  };
}
