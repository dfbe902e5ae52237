/** Domain errors, mapped to HTTP answers at the API's edge and to retry decisions in the workers. */

/** Bad input: answered 4xx, nothing recorded or enqueued. */
export class ValidationError extends Error {
  constructor(
    message: string,
    readonly status = 400,
  ) {
    super(message);
    this.name = 'ValidationError';
  }
}

export class NotFoundError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'NotFoundError';
  }
}

/** The service cannot take work now (e.g. Redis down or queue full): 503 with Retry-After. */
export class UnavailableError extends Error {
  constructor(
    message: string,
    readonly retryAfterSeconds = 5,
  ) {
    super(message);
    this.name = 'UnavailableError';
  }
}
