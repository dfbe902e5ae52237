/**
 * What went wrong with a Kubernetes call, reduced to what a worker decides on: retry (`transient`) or give
 * up (permanent). Built by `classify` from whatever the client threw. Duck-typed rather than importing
 * client-node, so that worker unit tests do not load it.
 *
 * Messages carry the Kubernetes Status message or a short network description only; never request
 * bodies or headers, which can hold Secret data and bearer tokens.
 */

/** The call in which the error happened, for the error's `operation` (logs). */
export interface CallContext {
  verb: string;
  resource: string;
  namespace?: string | undefined;
  name?: string | undefined;
}

export interface KubeApiErrorInit {
  /** HTTP status; undefined when no answer arrived (network failure, time-out). */
  status: number | undefined;
  /** The Status reason (`NotFound`, `Conflict`, `Invalid`, …), or the network failure (`Timeout`, …). */
  reason: string;
  message: string;
  transient: boolean;
  retryAfterSeconds?: number | undefined;
  operation?: string | undefined;
  /** The Status's field causes (a 422's), when it gave any. */
  causes?: readonly StatusCause[] | undefined;
}

/** One field a Status names as wrong: `spec.template.spec.containers[0].env[0].name` and what is wrong. */
export interface StatusCause {
  field?: string | undefined;
  message: string;
}

export class KubeApiError extends Error {
  readonly status: number | undefined;
  readonly reason: string;
  readonly transient: boolean;
  /** From Retry-After or the Status details (429, 503); a floor for the caller's back-off. */
  readonly retryAfterSeconds: number | undefined;
  /** e.g. `update deployments cf-apps/web`. */
  readonly operation: string | undefined;
  readonly causes: readonly StatusCause[] | undefined;

  constructor(init: KubeApiErrorInit) {
    super(init.message);
    this.name = 'KubeApiError';
    this.status = init.status;
    this.reason = init.reason;
    this.transient = init.transient;
    this.retryAfterSeconds = init.retryAfterSeconds;
    this.operation = init.operation;
    this.causes = init.causes;
  }
}

/** 409 AlreadyExists on create. Permanent: the caller should read and replace instead. */
export class AlreadyExistsError extends KubeApiError {
  constructor(init: Omit<KubeApiErrorInit, 'status' | 'reason' | 'transient'>) {
    super({ ...init, status: 409, reason: 'AlreadyExists', transient: false });
    this.name = 'AlreadyExistsError';
  }
}

/** 409 Conflict: a stale resourceVersion. Transient: re-read, re-apply the change, replace again. */
export class ConflictError extends KubeApiError {
  constructor(init: Omit<KubeApiErrorInit, 'status' | 'reason' | 'transient'>) {
    super({ ...init, status: 409, reason: 'Conflict', transient: true });
    this.name = 'ConflictError';
  }
}

/** The HTTP status of a client-node `ApiException` (or of a KubeApiError), else undefined. */
export function httpStatusOf(err: unknown): number | undefined {
  if (err instanceof KubeApiError) return err.status;
  if (typeof err !== 'object' || err === null) return undefined;
  const code = (err as { code?: unknown }).code;
  // Node system errors carry string codes (ECONNRESET); only ApiException has a numeric HTTP code.
  return typeof code === 'number' && code >= 100 && code <= 599 ? code : undefined;
}

/** Network error codes after which the same request may well succeed. */
const TRANSIENT_NETWORK_CODES: Record<string, string> = {
  ECONNREFUSED: 'ConnectionRefused',
  ECONNRESET: 'ConnectionReset',
  ECONNABORTED: 'ConnectionReset',
  EPIPE: 'ConnectionReset',
  ETIMEDOUT: 'Timeout',
  ESOCKETTIMEDOUT: 'Timeout',
  EHOSTUNREACH: 'NetworkUnreachable',
  ENETUNREACH: 'NetworkUnreachable',
  ENETDOWN: 'NetworkUnreachable',
  EAI_AGAIN: 'DNSFailure',
  ENOTFOUND: 'DNSFailure',
};

const NETWORK_MESSAGES: Record<string, string> = {
  ConnectionRefused: 'connection refused',
  ConnectionReset: 'connection reset or dropped before an answer',
  Timeout: 'no answer in time',
  NetworkUnreachable: 'network unreachable',
  DNSFailure: 'host name not resolved',
  NetworkError: 'network error',
};

/** Statuses after which retrying the same request can help (besides every 5xx). */
const TRANSIENT_STATUSES = new Set([408, 409, 429]);

const REASON_BY_STATUS: Record<number, string> = {
  400: 'BadRequest',
  401: 'Unauthorized',
  403: 'Forbidden',
  404: 'NotFound',
  405: 'MethodNotAllowed',
  406: 'NotAcceptable',
  408: 'Timeout',
  409: 'Conflict',
  410: 'Expired',
  413: 'RequestEntityTooLarge',
  415: 'UnsupportedMediaType',
  422: 'Invalid',
  429: 'TooManyRequests',
  500: 'InternalError',
  503: 'ServiceUnavailable',
  504: 'Timeout',
};

/** Error bodies that are not a Status (e.g. from a proxy) are cut to this, in case they are large. */
const MAX_RAW_MESSAGE = 300;

interface StatusBody {
  reason?: unknown;
  message?: unknown;
  details?: { retryAfterSeconds?: unknown; causes?: unknown };
}

/** The causes a Status lists, those with a message; undefined when none. */
function causesOf(status: StatusBody | undefined): StatusCause[] | undefined {
  const list = status?.details?.causes;
  if (!Array.isArray(list)) return undefined;
  const out: StatusCause[] = [];
  for (const c of list as unknown[]) {
    if (typeof c !== 'object' || c === null) continue;
    const { field, message } = c as { field?: unknown; message?: unknown };
    if (typeof message !== 'string') continue;
    out.push(typeof field === 'string' && field !== '' ? { field, message } : { message });
  }
  return out.length > 0 ? out : undefined;
}

function operationOf(ctx: CallContext | undefined): string | undefined {
  if (!ctx) return undefined;
  const target = ctx.name ? `${ctx.namespace ? `${ctx.namespace}/` : ''}${ctx.name}` : ctx.namespace;
  return `${ctx.verb} ${ctx.resource}${target ? ` ${target}` : ''}`;
}

function parseStatus(body: unknown): { status?: StatusBody; raw?: string } {
  if (typeof body === 'object' && body !== null) return { status: body };
  if (typeof body !== 'string' || body.trim() === '') return {};
  try {
    const parsed: unknown = JSON.parse(body);
    if (typeof parsed === 'object' && parsed !== null) return { status: parsed };
  } catch {
    // Not JSON: keep a bounded excerpt as the message.
  }
  return { raw: body.trim().slice(0, MAX_RAW_MESSAGE) };
}

/** Retry-After as delta-seconds or an HTTP date; a Status's details.retryAfterSeconds otherwise. */
function retryAfterOf(headers: unknown, status: StatusBody | undefined): number | undefined {
  if (typeof headers === 'object' && headers !== null) {
    const entry = Object.entries(headers).find(([k]) => k.toLowerCase() === 'retry-after');
    const value: unknown = entry?.[1];
    if (typeof value === 'string' && value.trim() !== '') {
      const seconds = Number(value);
      if (Number.isFinite(seconds) && seconds >= 0) return seconds;
      const date = Date.parse(value);
      if (!Number.isNaN(date)) return Math.max(0, Math.ceil((date - Date.now()) / 1000));
    }
  }
  const fromDetails = status?.details?.retryAfterSeconds;
  return typeof fromDetails === 'number' && fromDetails >= 0 ? fromDetails : undefined;
}

function fromHttp(err: object, status: number, ctx: CallContext | undefined): KubeApiError {
  const { status: body, raw } = parseStatus((err as { body?: unknown }).body);
  const reason =
    typeof body?.reason === 'string' && body.reason !== ''
      ? body.reason
      : (REASON_BY_STATUS[status] ?? (status >= 500 ? 'InternalError' : 'Unknown'));
  const message =
    typeof body?.message === 'string' && body.message !== ''
      ? body.message
      : (raw ?? `HTTP ${status} ${reason}`);
  const init = {
    message,
    operation: operationOf(ctx),
    retryAfterSeconds: retryAfterOf((err as { headers?: unknown }).headers, body),
    causes: causesOf(body),
  };
  if (status === 409 && reason === 'AlreadyExists') return new AlreadyExistsError(init);
  if (status === 409 && reason === 'Conflict') return new ConflictError(init);
  return new KubeApiError({
    ...init,
    status,
    reason,
    transient: status >= 500 || TRANSIENT_STATUSES.has(status),
  });
}

function networkReason(err: { code?: unknown; name?: unknown; type?: unknown; message?: unknown }) {
  const code = typeof err.code === 'string' ? err.code : undefined;
  if (code && TRANSIENT_NETWORK_CODES[code]) return TRANSIENT_NETWORK_CODES[code];
  // node-fetch's AbortError (type 'aborted'), DOMException TimeoutError/AbortError.
  if (err.name === 'AbortError' || err.name === 'TimeoutError' || err.type === 'aborted') return 'Timeout';
  const message = typeof err.message === 'string' ? err.message : '';
  if (/socket hang up|ECONNRESET/i.test(message)) return 'ConnectionReset';
  if (/ECONNREFUSED/.test(message)) return 'ConnectionRefused';
  if (/timed? ?out|timeout/i.test(message)) return 'Timeout';
  // node-fetch wraps other socket failures as FetchError type 'system'; undici-style codes too.
  if (err.type === 'system' || (code && /^(E[A-Z]+|UND_ERR_\w+)$/.test(code))) return 'NetworkError';
  return undefined;
}

/**
 * The namespace named by a 404 that says the namespace itself does not exist (`namespaces "x" not
 * found`, what a create or a Lease claim in a missing namespace gets), else undefined.
 */
export function missingNamespace(err: unknown): string | undefined {
  if (!(err instanceof KubeApiError) || err.status !== 404) return undefined;
  return /^namespaces "([^"]+)" not found$/.exec(err.message)?.[1];
}

/** Turns anything a Kubernetes call threw into a KubeApiError. */
export function classify(err: unknown, ctx?: CallContext): KubeApiError {
  if (err instanceof KubeApiError) return err;
  const status = httpStatusOf(err);
  if (status !== undefined && typeof err === 'object' && err !== null) return fromHttp(err, status, ctx);
  const e = (typeof err === 'object' && err !== null ? err : {}) as {
    code?: unknown;
    name?: unknown;
    type?: unknown;
    message?: unknown;
  };
  const reason = networkReason(e);
  const code = typeof e.code === 'string' ? ` (${e.code})` : '';
  if (reason) {
    return new KubeApiError({
      status: undefined,
      reason,
      transient: true,
      // Our own wording rather than the client's message (node-fetch embeds the request URL): stable
      // for logs and alerts; the adapter's own time-out error says how long it waited.
      message:
        e.name === 'TimeoutError' && typeof e.message === 'string'
          ? e.message
          : `${NETWORK_MESSAGES[reason] ?? 'request failed'}${code}`,
      operation: operationOf(ctx),
    });
  }
  // A bug in our code or the client (TypeError, a bad kubeconfig): retrying the same call will not help.
  return new KubeApiError({
    status: undefined,
    reason: 'ClientError',
    transient: false,
    message: err instanceof Error ? `${err.name}: ${err.message}` : String(err),
    operation: operationOf(ctx),
  });
}

/** The error thrown when a request gets no complete answer within the adapter's time-out. */
export function requestTimeoutError(timeoutMs: number): Error {
  return Object.assign(new Error(`no answer within ${timeoutMs} ms`), {
    name: 'TimeoutError',
    code: 'ETIMEDOUT',
  });
}
