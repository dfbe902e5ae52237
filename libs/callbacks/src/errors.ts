/**
 * What a callback can fail with. Messages are built here from redacted URLs and error codes only, so
 * neither the URL's userinfo nor the request body (which may carry secrets) can end up in a log line.
 */

/** Base class, so a caller can catch every callback failure at once. */
export class CallbackError extends Error {
  constructor(message: string) {
    super(message);
    this.name = new.target.name;
  }
}

/** The callback URL can never work (not parseable, not http/https): retrying will not help. */
export class CallbackUrlError extends CallbackError {
  readonly permanent = true;
}

/** The TLS files could not be read or do not form a usable client identity; raised at start-up. */
export class CallbackTlsError extends CallbackError {
  constructor(
    message: string,
    readonly file?: string,
  ) {
    super(message);
  }
}

export interface UnavailableDetails {
  /** CC's HTTP status, when it answered at all (5xx, 429, 408). */
  status?: number;
  /** From CC's Retry-After header, when it sent one. */
  retryAfterSeconds?: number;
  /** Node's error code for network failures (ECONNREFUSED, ETIMEDOUT, TLS codes, ...). */
  code?: string;
}

/** CC could not take the callback now (network, TLS, timeout, 5xx, 429): the caller's queue retries. */
export class CallbackUnavailableError extends CallbackError {
  readonly transient = true;
  readonly status?: number;
  readonly retryAfterSeconds?: number;
  readonly code?: string;

  constructor(message: string, details: UnavailableDetails = {}) {
    super(message);
    // Assigned one by one so absent details stay absent (toMatchObject, logs).
    if (details.status !== undefined) this.status = details.status;
    if (details.retryAfterSeconds !== undefined) this.retryAfterSeconds = details.retryAfterSeconds;
    if (details.code !== undefined) this.code = details.code;
  }
}
