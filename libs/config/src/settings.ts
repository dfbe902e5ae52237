/**
 * Every setting of the service, read from the environment once at start-up and validated: a bad value
 * stops the process with a message naming the variable, instead of surfacing later. Nothing else in the
 * code reads process.env. The README's settings table lists the same names and defaults.
 */
import { z } from 'zod';

const bool = z
  .enum(['true', 'false', '1', '0', 'yes', 'no'])
  .transform((v) => v === 'true' || v === '1' || v === 'yes');
const int = (min: number, max: number) => z.coerce.number().int().min(min).max(max);

const schema = z.object({
  PORT: int(0, 65535).default(8080),
  HOST: z.string().min(1).default('127.0.0.1'),
  REDIS_URL: z
    .string()
    .regex(/^rediss?:\/\//, 'must be a redis:// or rediss:// URL')
    .default('redis://127.0.0.1:6379'),
  KUBECONFIG: z.string().optional(),
  /** Set by Kubernetes in every pod: the in-cluster configuration is available. */
  KUBERNETES_SERVICE_HOST: z.string().optional(),
  OPI_NAMESPACE: z
    .string()
    .regex(/^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/, 'must be a DNS-1123 label')
    .default('cf-workloads'),
  OPI_QUEUE_PREFIX: z
    .string()
    .min(1)
    .max(64)
    .regex(/^[^:\s]+$/, 'must not contain ":" or spaces')
    .default('opi'),
  OPI_SYNC_INTERVAL_MS: int(500, 3_600_000).default(5000),
  OPI_WORKER_CONCURRENCY: int(1, 1000).default(16),
  OPI_JOB_ATTEMPTS: int(1, 100).default(10),
  /** A job whose worker stops renewing its lock for this long is taken again by another worker. */
  OPI_JOB_LOCK_MS: int(1000, 600_000).default(30_000),
  OPI_RUN_AS_NON_ROOT: bool.default(true),
  OPI_DROPLET_REGISTRY: z.string().min(1).max(253).default('registry.cf.internal'),
  OPI_BODY_LIMIT_BYTES: int(1024, 64 * 1024 * 1024).default(1024 * 1024),
  OPI_SHUTDOWN_TIMEOUT_MS: int(0, 600_000).default(25_000),
  /** CC's internal API, where crash reports go (e.g. https://cloud-controller-ng.service.cf.internal:9023). */
  CC_INTERNAL_URL: z.url({ protocol: /^https?$/ }).optional(),
  /** Mutual TLS towards CC (its internal API asks for a client certificate). */
  OPI_CC_CA_FILE: z.string().optional(),
  OPI_CC_CERT_FILE: z.string().optional(),
  OPI_CC_KEY_FILE: z.string().optional(),
  OPI_CALLBACK_ATTEMPTS: int(1, 100).default(15),
  /** First retry delay of a report to CC; it doubles on every try (with jitter). */
  OPI_CALLBACK_BACKOFF_MS: int(10, 600_000).default(2000),
  OPI_CALLBACK_TIMEOUT_MS: int(100, 600_000).default(10_000),
  /** Image that stages buildpack apps (it writes its result to the termination message). */
  OPI_STAGING_RECIPE_IMAGE: z.string().min(1).max(1024).default('cloudfoundry/opi-buildpack-stager:latest'),
  /** Registries reached over plain http when reading docker image configs (comma-separated hosts). */
  OPI_INSECURE_REGISTRIES: z.string().default(''),
  /** How long a finished, reported task or staging Job is kept before it is deleted. */
  OPI_FINISHED_JOB_TTL_SECONDS: int(0, 30 * 24 * 3600).default(600),
  LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
});

export type Env = z.infer<typeof schema>;

export interface Settings {
  http: { port: number; host: string; bodyLimitBytes: number };
  redisUrl: string;
  kubeconfig: string | undefined;
  inCluster: boolean;
  namespace: string;
  queuePrefix: string;
  syncIntervalMs: number;
  worker: { concurrency: number; attempts: number; lockMs: number };
  runAsNonRoot: boolean;
  dropletRegistry: string;
  shutdownTimeoutMs: number;
  logLevel: Env['LOG_LEVEL'];
  cc: {
    internalUrl: string | undefined;
    tls: { caFile?: string; certFile?: string; keyFile?: string };
    attempts: number;
    backoffMs: number;
    timeoutMs: number;
  };
  staging: { recipeImage: string; insecureRegistries: string[] };
  finishedJobTtlSeconds: number;
}

export class SettingsError extends Error {}

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
  return Object.freeze({
    http: { port: e.PORT, host: e.HOST, bodyLimitBytes: e.OPI_BODY_LIMIT_BYTES },
    redisUrl: e.REDIS_URL,
    kubeconfig: e.KUBECONFIG,
    inCluster: e.KUBERNETES_SERVICE_HOST !== undefined,
    namespace: e.OPI_NAMESPACE,
    queuePrefix: e.OPI_QUEUE_PREFIX,
    syncIntervalMs: e.OPI_SYNC_INTERVAL_MS,
    worker: {
      concurrency: e.OPI_WORKER_CONCURRENCY,
      attempts: e.OPI_JOB_ATTEMPTS,
      lockMs: e.OPI_JOB_LOCK_MS,
    },
    runAsNonRoot: e.OPI_RUN_AS_NON_ROOT,
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
      attempts: e.OPI_CALLBACK_ATTEMPTS,
      backoffMs: e.OPI_CALLBACK_BACKOFF_MS,
      timeoutMs: e.OPI_CALLBACK_TIMEOUT_MS,
    },
    staging: {
      recipeImage: e.OPI_STAGING_RECIPE_IMAGE,
      insecureRegistries: e.OPI_INSECURE_REGISTRIES.split(',')
        .map((s) => s.trim())
        .filter(Boolean),
    },
    finishedJobTtlSeconds: e.OPI_FINISHED_JOB_TTL_SECONDS,
  });
}
