/**
 * What the API refuses in order to protect itself, Redis and the cluster (the body size limit is the
 * body parser's, in app.ts):
 *
 * - **Rate per client** (OPI_RATE_LIMIT_PER_MINUTE): CC's routes, keyed by who the client is: its
 *   client certificate (SHA-256 fingerprint) and/or the bearer token it authenticated with (a hash of
 *   it: the token itself is never a key or logged), else its address. Over the limit: 429 with
 *   Retry-After and the contract's error body. Probes, metrics and the dashboard are not counted.
 *
 *   Counted in the process, in fixed one-minute windows (ClientWindows): the limit holds per API replica,
 *   and a client may reach twice it across a window's end. Why: docs/decisions/0005-rate-limiter.md.
 *
 * - **Queue depth** (OPI_MAX_QUEUE_DEPTH): a write whose queue already holds that many waiting and
 *   delayed jobs is answered 503 with Retry-After before anything is recorded, so a backlog the workers
 *   cannot drain (cluster down, too few workers) stops growing in Redis instead of filling it up. CC
 *   retries: its convergence loop desires again whatever is missing. Reads are never refused.
 */
import { createHash } from 'node:crypto';
import { TLSSocket } from 'node:tls';
import type { Request, RequestHandler } from 'express';
import type { Socket } from 'node:net';
import { ipKeyGenerator } from 'express-rate-limit';
import type { OpiMetrics } from '@opi/metrics';
import type { QueueBacklog } from '@opi/queue';
import { sendError } from './errors.js';

/** How long a client over the limit is told to wait, at least (seconds). */
const MIN_RETRY_AFTER_SECONDS = 1;
/** Retry-After of a write refused for back-pressure: about what a few workers need to drain a burst. */
export const BACKPRESSURE_RETRY_AFTER_SECONDS = 10;

function shortHash(value: string): string {
  return createHash('sha256').update(value).digest('hex').slice(0, 16);
}

/** What a socket says of its client: its verified certificate, else its address (IPv6 by /56). */
const socketIdentities = new WeakMap<Socket, string>();
function socketIdentity(socket: Socket): string {
  let id = socketIdentities.get(socket);
  if (id === undefined) {
    const cert = socket instanceof TLSSocket && socket.authorized ? socket.getPeerCertificate() : undefined;
    id = cert?.fingerprint256
      ? `cert:${cert.fingerprint256.replace(/:/g, '').toLowerCase()}`
      : `ip:${ipKeyGenerator(socket.remoteAddress ?? 'unknown')}`;
    // Per connection: CC keeps its connections alive, so this is worked out once, not per request.
    socketIdentities.set(socket, id);
  }
  return id;
}

/** Hashes of the tokens seen; only tokens the API accepted reach the limiter, so it stays small. */
const tokenHashes = new Map<string, string>();
function tokenIdentity(token: string): string {
  let id = tokenHashes.get(token);
  if (id === undefined) {
    id = `token:${shortHash(token)}`;
    if (tokenHashes.size < 1000) tokenHashes.set(token, id);
  }
  return id;
}

/**
 * Who the client is, for the rate limit and the log: `cert:<fingerprint>` for a verified client
 * certificate, `token:<hash>` for a bearer token the API checked (only when tokens are configured:
 * otherwise a client could name itself anew with every request), both when it has both, else
 * `ip:<address>` (IPv6 by /56).
 */
export function clientIdentity(req: Request, tokensConfigured: boolean): string {
  const bySocket = socketIdentity(req.socket);
  if (!tokensConfigured) return bySocket;
  const m = /^Bearer +([^\s]+) *$/i.exec(req.headers.authorization ?? '');
  if (!m?.[1]) return bySocket;
  const token = tokenIdentity(m[1]);
  return bySocket.startsWith('cert:') ? `${bySocket}|${token}` : token;
}

/**
 * Requests per client in fixed windows: every count starts again when a window ends (one Map, cleared,
 * so it never holds more clients than one window saw).
 */
export class ClientWindows {
  private counts = new Map<string, number>();
  private endsAt: number;

  constructor(
    private readonly windowMs: number,
    private readonly now: () => number = Date.now,
  ) {
    this.endsAt = now() + windowMs;
  }

  /** Counts one request of `client`: its count in this window, and the ms until the window ends. */
  hit(client: string): { count: number; resetInMs: number } {
    const t = this.now();
    if (t >= this.endsAt) {
      this.counts.clear();
      // The next window starts now: a quiet spell does not leave a window that ends at once.
      this.endsAt = t + this.windowMs;
    }
    const count = (this.counts.get(client) ?? 0) + 1;
    this.counts.set(client, count);
    return { count, resetInMs: this.endsAt - t };
  }
}

export interface RateLimitOptions {
  perMinute: number;
  /** Whether CC's routes check bearer tokens (then a token names its client). */
  tokensConfigured: boolean;
  metrics?: OpiMetrics | undefined;
  /** The clock, for tests. */
  now?: () => number;
}

/** Mount after the credentials check, so only authenticated identities become keys. */
export function rateLimitPerClient(options: RateLimitOptions): RequestHandler {
  const windows = new ClientWindows(60_000, options.now);
  return (req, res, next) => {
    const client = clientIdentity(req, options.tokensConfigured);
    const { count, resetInMs } = windows.hit(client);
    if (count <= options.perMinute) {
      next();
      return;
    }
    // No RateLimit-* headers on every answer of the hot paths; Retry-After on a refusal.
    res.setHeader('Retry-After', String(Math.max(MIN_RETRY_AFTER_SECONDS, Math.ceil(resetInMs / 1000))));
    options.metrics?.rateLimited.inc();
    req.log.warn({ client }, 'rate limited');
    sendError(
      req,
      res,
      429,
      `too many requests: at most ${options.perMinute} a minute per client, try again later`,
    );
  };
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
      const decide = (depth: number): void => {
        if (depth < maxDepth) {
          next();
          return;
        }
        metrics?.backpressureRejections.inc({ queue });
        req.log.warn({ queue, depth, maxDepth }, 'write refused: queue full');
        res.setHeader('Retry-After', String(BACKPRESSURE_RETRY_AFTER_SECONDS));
        sendError(
          req,
          res,
          503,
          `the ${queue} queue is full (${depth} jobs waiting, at most ${maxDepth}): try again later`,
        );
      };
      // Nearly always known: the depth is read once a second, whatever the rate of writes.
      const known = backlog.fresh(queue);
      if (known !== undefined) {
        decide(known);
        return;
      }
      backlog.depth(queue).then(
        decide,
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
