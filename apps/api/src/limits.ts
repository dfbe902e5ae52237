/**
 * What the API refuses in order to protect itself, Redis and the cluster (the body size limit is the
 * body parser's, in app.ts):
 *
 * - **Rate per client** (OPI_RATE_LIMIT_PER_MINUTE): CC's routes, keyed by who the client is: its
 *   client certificate (SHA-256 fingerprint) and/or the bearer token it authenticated with (a hash of
 *   it: the token itself is never a key or logged), else its address. Over the limit: 429 with
 *   Retry-After and the contract's error body. Probes, metrics and the dashboard are not counted.
 *
 *   The counters live in the process (express-rate-limit's MemoryStore), so the limit holds per API
 *   replica: with N replicas behind a Service a client may reach up to N times it. That is chosen over
 *   a Redis store on purpose: the limit is a guard against a runaway client, not a quota to bill, and a
 *   Redis store would add a round trip to every request (doubling Redis work on the hot reads) and stop
 *   limiting, or refuse everything, exactly when Redis is in trouble.
 *
 * - **Queue depth** (OPI_MAX_QUEUE_DEPTH): a write whose queue already holds that many waiting and
 *   delayed jobs is answered 503 with Retry-After before anything is recorded, so a backlog the workers
 *   cannot drain (cluster down, too few workers) stops growing in Redis instead of filling it up. CC
 *   retries: its convergence loop desires again whatever is missing. Reads are never refused.
 */
import { createHash } from 'node:crypto';
import { TLSSocket } from 'node:tls';
import type { Request, RequestHandler } from 'express';
import { ipKeyGenerator, rateLimit } from 'express-rate-limit';
import { errorBody } from '@opi/contract';
import type { OpiMetrics } from '@opi/metrics';
import type { QueueBacklog } from '@opi/queue';

/** How long a client over the limit is told to wait, at least (seconds). */
const MIN_RETRY_AFTER_SECONDS = 1;
/** Retry-After of a write refused for back-pressure: about what a few workers need to drain a burst. */
export const BACKPRESSURE_RETRY_AFTER_SECONDS = 10;

function shortHash(value: string): string {
  return createHash('sha256').update(value).digest('hex').slice(0, 16);
}

/**
 * Who the client is, for the rate limit and the log: `cert:<fingerprint>` for a verified client
 * certificate, `token:<hash>` for a bearer token the API checked (only when tokens are configured:
 * otherwise a client could name itself anew with every request), else `ip:<address>` (IPv6 by /56).
 */
export function clientIdentity(req: Request, tokensConfigured: boolean): string {
  const parts: string[] = [];
  const socket = req.socket;
  if (socket instanceof TLSSocket && socket.authorized) {
    const cert = socket.getPeerCertificate();
    if (cert.fingerprint256) parts.push(`cert:${cert.fingerprint256.replace(/:/g, '').toLowerCase()}`);
  }
  if (tokensConfigured) {
    const m = /^Bearer +([^\s]+) *$/i.exec(req.headers.authorization ?? '');
    if (m?.[1]) parts.push(`token:${shortHash(m[1])}`);
  }
  if (parts.length === 0) parts.push(`ip:${ipKeyGenerator(socket.remoteAddress ?? 'unknown')}`);
  return parts.join('|');
}

export interface RateLimitOptions {
  perMinute: number;
  /** Whether CC's routes check bearer tokens (then a token names its client). */
  tokensConfigured: boolean;
  metrics?: OpiMetrics | undefined;
}

/** Mount after the credentials check, so only authenticated identities become keys. */
export function rateLimitPerClient(options: RateLimitOptions): RequestHandler {
  return rateLimit({
    windowMs: 60_000,
    limit: options.perMinute,
    // Retry-After is set in the handler; no RateLimit-* headers on every answer of the hot paths.
    standardHeaders: false,
    legacyHeaders: false,
    keyGenerator: (req) => clientIdentity(req, options.tokensConfigured),
    // X-Forwarded-For is not trusted (anyone can send it): behind a proxy, clients without a token or
    // certificate share the proxy's address, which is not a misconfiguration to warn about.
    validate: { xForwardedForHeader: false },
    handler: (req, res) => {
      const reset = (req as Request & { rateLimit?: { resetTime?: Date } }).rateLimit?.resetTime;
      const seconds = reset ? Math.ceil((reset.getTime() - Date.now()) / 1000) : 60;
      res.setHeader('Retry-After', String(Math.max(MIN_RETRY_AFTER_SECONDS, seconds)));
      options.metrics?.rateLimited.inc();
      req.log.warn({ client: clientIdentity(req, options.tokensConfigured) }, 'rate limited');
      res
        .status(429)
        .json(
          errorBody(`too many requests: at most ${options.perMinute} a minute per client, try again later`),
        );
    },
  });
}

export interface BackPressureOptions {
  backlog: QueueBacklog;
  /** Refuse while the queue holds at least this many waiting and delayed jobs; 0: never. */
  maxDepth: number;
  metrics?: OpiMetrics | undefined;
}

/** A route guard for writes that enqueue into `queue`; mount it before the route's handler. */
export type QueueGuard = (queue: string) => RequestHandler;

export function backPressure(options: BackPressureOptions | undefined): QueueGuard {
  if (!options || options.maxDepth <= 0)
    return () => (_req, _res, next) => {
      next();
    };
  const { backlog, maxDepth, metrics } = options;
  return (queue) => {
    metrics?.backpressureRejections.inc({ queue }, 0);
    return (req, res, next) => {
      backlog.depth(queue).then(
        (depth) => {
          if (depth < maxDepth) {
            next();
            return;
          }
          metrics?.backpressureRejections.inc({ queue });
          req.log.warn({ queue, depth, maxDepth }, 'write refused: queue full');
          res.setHeader('Retry-After', String(BACKPRESSURE_RETRY_AFTER_SECONDS));
          res
            .status(503)
            .json(
              errorBody(
                `the ${queue} queue is full (${depth} jobs waiting, at most ${maxDepth}): try again later`,
              ),
            );
        },
        // Never read yet and Redis unavailable: let the write go on, it meets the same Redis and fails
        // with the usual 503 (or succeeds, if Redis came back).
        (err: unknown) => {
          req.log.warn({ err, queue }, 'queue depth unknown; not refusing');
          next();
        },
      );
    };
  };
}
