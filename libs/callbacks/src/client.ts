/**
 * POSTs JSON callbacks to CC and sorts the outcome into delivered, rejected (CC will never take it) or a
 * thrown CallbackUnavailableError (try again later). Retries beyond one stale keep-alive socket are the
 * caller's queue's business, so that backoff and attempt limits live in one place.
 */
import http from 'node:http';
import https from 'node:https';
import { CallbackUnavailableError } from './errors.js';
import type { LoadedTls } from './tls.js';
import { basicAuthOf, classifyStatus, parseCallbackUrl, parseRetryAfter, redactUrl } from './url.js';

export const DEFAULT_CALLBACK_TIMEOUT_MS = 10_000;
/** How much of a rejection's body is kept: enough for CC's error description. */
export const REJECTED_BODY_CHARS = 500;
// Bytes kept while reading a body; the rest is drained unread so the socket can be reused.
const KEPT_BODY_BYTES = 4 * REJECTED_BODY_CHARS;

export type CallbackResult =
  | { kind: 'delivered'; status: number }
  /** A 4xx (other than 408/429): e.g. 400 task already finished, 404 unknown task. Do not retry. */
  | { kind: 'rejected'; status: number; body: string };

export interface CallbackClientOptions {
  /** Applies to https URLs only; plain http URLs (e.g. inside a mesh) go without it. */
  tls?: LoadedTls;
  /** Whole-request deadline: connect, TLS, send, and reading the answer. */
  timeoutMs?: number;
}

interface Answer {
  status: number;
  retryAfter: string | undefined;
  body: string;
}

/** Why one attempt failed, with what is needed to decide whether to retry it at once. Internal. */
class AttemptFailure extends Error {
  constructor(
    readonly error: Error & { code?: string },
    readonly reusedSocket: boolean,
    readonly gotResponse: boolean,
    readonly timedOut: boolean,
  ) {
    super(error.message);
  }
}

export class CallbackClient {
  readonly #timeoutMs: number;
  // One keep-alive agent per protocol: callbacks come in bursts to the same CC host.
  readonly #http: http.Agent;
  readonly #https: https.Agent;

  constructor(opts: CallbackClientOptions = {}) {
    const timeoutMs = opts.timeoutMs ?? DEFAULT_CALLBACK_TIMEOUT_MS;
    if (!Number.isFinite(timeoutMs) || timeoutMs <= 0) {
      throw new RangeError(`callback timeoutMs must be a positive number, got ${timeoutMs}`);
    }
    this.#timeoutMs = timeoutMs;
    this.#http = new http.Agent({ keepAlive: true });
    const tls = opts.tls;
    this.#https = new https.Agent({
      keepAlive: true,
      rejectUnauthorized: tls?.rejectUnauthorized ?? true,
      ...(tls?.ca !== undefined && { ca: tls.ca }),
      ...(tls?.cert !== undefined && { cert: tls.cert }),
      ...(tls?.key !== undefined && { key: tls.key }),
    });
  }

  /**
   * Delivered on 2xx, rejected on a permanent 4xx; throws CallbackUnavailableError when CC cannot take it
   * now and CallbackUrlError when the URL can never work.
   */
  async postJson(url: string, body: unknown): Promise<CallbackResult> {
    const target = parseCallbackUrl(url);
    const auth = basicAuthOf(target);
    const json = JSON.stringify(body) as string | undefined;
    if (json === undefined) throw new TypeError('callback body must be JSON-serialisable, got undefined');
    const payload = Buffer.from(json, 'utf8');
    const where = `POST ${redactUrl(target)}`;
    const secrets = secretsOf(target);
    const deadline = Date.now() + this.#timeoutMs;

    let answer: Answer;
    try {
      answer = await this.#attempt(target, auth, payload, deadline);
    } catch (e) {
      // A kept-alive socket the server closed just as we wrote: the request almost surely never reached
      // CC, and Node's docs recommend one immediate retry. Should CC have seen it, it answers 400 (rejected).
      if (!(e instanceof AttemptFailure) || !isStaleSocket(e) || Date.now() >= deadline) {
        throw unavailable(e, where, this.#timeoutMs, secrets);
      }
      try {
        answer = await this.#attempt(target, auth, payload, deadline);
      } catch (e2) {
        throw unavailable(e2, where, this.#timeoutMs, secrets);
      }
    }

    switch (classifyStatus(answer.status)) {
      case 'delivered':
        return { kind: 'delivered', status: answer.status };
      case 'rejected':
        return { kind: 'rejected', status: answer.status, body: answer.body.slice(0, REJECTED_BODY_CHARS) };
      case 'unavailable': {
        const retryAfterSeconds = parseRetryAfter(answer.retryAfter);
        const after = retryAfterSeconds === undefined ? '' : `, retry after ${retryAfterSeconds} s`;
        throw new CallbackUnavailableError(`${where}: CC answered ${answer.status}${after}`, {
          status: answer.status,
          ...(retryAfterSeconds !== undefined && { retryAfterSeconds }),
        });
      }
    }
  }

  /** Closes kept-alive sockets; for shutdown, so the process can exit. */
  close(): void {
    this.#http.destroy();
    this.#https.destroy();
  }

  #attempt(target: URL, auth: string | undefined, payload: Buffer, deadline: number): Promise<Answer> {
    const isHttps = target.protocol === 'https:';
    const request = isHttps ? https.request : http.request;
    return new Promise<Answer>((resolve, reject) => {
      let settled = false;
      let timedOut = false;
      let gotResponse = false;
      const req = request({
        method: 'POST',
        protocol: target.protocol,
        // URL keeps IPv6 literals bracketed; the socket layer wants them bare.
        hostname: target.hostname.replace(/^\[(.*)\]$/, '$1'),
        port: target.port === '' ? undefined : Number(target.port),
        path: `${target.pathname}${target.search}`,
        agent: isHttps ? this.#https : this.#http,
        headers: {
          'content-type': 'application/json',
          'content-length': payload.length,
          accept: 'application/json',
        },
        ...(auth !== undefined && { auth }),
      });
      const fail = (error: Error) => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        reject(new AttemptFailure(error, req.reusedSocket, gotResponse, timedOut));
      };
      const timer = setTimeout(
        () => {
          timedOut = true;
          req.destroy(Object.assign(new Error('timed out'), { code: 'ETIMEDOUT' }));
        },
        Math.max(1, deadline - Date.now()),
      );

      req.on('error', fail);
      req.on('response', (res) => {
        gotResponse = true;
        const chunks: Buffer[] = [];
        let kept = 0;
        res.on('data', (chunk: Buffer) => {
          if (kept >= KEPT_BODY_BYTES) return;
          chunks.push(chunk);
          kept += chunk.length;
        });
        res.on('error', fail);
        res.on('end', () => {
          if (settled) return;
          settled = true;
          clearTimeout(timer);
          resolve({
            status: res.statusCode ?? 0,
            retryAfter: res.headers['retry-after'],
            body: Buffer.concat(chunks).toString('utf8'),
          });
        });
        // A connection cut mid-body ends with 'close' and no 'end'.
        res.on('close', () => {
          if (!res.complete)
            fail(Object.assign(new Error('connection closed mid-answer'), { code: 'ECONNRESET' }));
        });
      });
      req.end(payload);
    });
  }
}

function isStaleSocket(f: AttemptFailure): boolean {
  return (
    f.reusedSocket &&
    !f.gotResponse &&
    !f.timedOut &&
    (f.error.code === 'ECONNRESET' || f.error.code === 'EPIPE' || f.error.code === 'ECONNABORTED')
  );
}

/** The URL's credentials, raw and decoded, to scrub from any message that Node built. */
function secretsOf(url: URL): string[] {
  const out = new Set<string>();
  for (const part of [url.username, url.password]) {
    if (part === '') continue;
    out.add(part);
    try {
      out.add(decodeURIComponent(part));
    } catch {
      // basicAuthOf has already rejected malformed userinfo.
    }
  }
  return [...out].filter((s) => s.length > 0);
}

function scrub(text: string, secrets: string[]): string {
  let out = text;
  for (const s of secrets) out = out.split(s).join('***');
  return out;
}

function unavailable(e: unknown, where: string, timeoutMs: number, secrets: string[]): Error {
  if (!(e instanceof AttemptFailure)) return e instanceof Error ? e : new Error(String(e));
  if (e.timedOut) {
    return new CallbackUnavailableError(`${where}: no answer within ${timeoutMs} ms`, { code: 'ETIMEDOUT' });
  }
  // Only Node's own message and code, never the cause object, so nothing else can reach a log.
  const code = e.error.code;
  const message = scrub(e.error.message, secrets);
  return new CallbackUnavailableError(`${where} failed: ${message}`, code === undefined ? {} : { code });
}
