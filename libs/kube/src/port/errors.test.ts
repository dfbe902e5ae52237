import { describe, expect, it } from '@jest/globals';
import {
  AlreadyExistsError,
  ConflictError,
  KubeApiError,
  classify,
  missingNamespace,
  requestTimeoutError,
} from './errors.js';

/** The shape client-node 1.x throws: numeric code, the raw body text, the response headers. */
function apiException(code: number, body: unknown, headers: Record<string, string> = {}): Error {
  return Object.assign(new Error(`HTTP-Code: ${code}\nMessage: Unknown API Status Code!`), {
    code,
    body: typeof body === 'string' || body === undefined ? body : JSON.stringify(body),
    headers,
  });
}

function status(code: number, reason: string, message: string, details?: object) {
  return { kind: 'Status', apiVersion: 'v1', status: 'Failure', code, reason, message, details };
}

function systemError(code: string, message = code): Error {
  return Object.assign(new Error(message), { code });
}

describe('classify: HTTP answers', () => {
  it.each([
    [500, 'InternalError'],
    [502, 'BadGateway'],
    [503, 'ServiceUnavailable'],
    [504, 'Timeout'],
    [429, 'TooManyRequests'],
    [408, 'Timeout'],
  ])('%i %s is transient', (code, reason) => {
    const e = classify(apiException(code, status(code, reason, 'try later')));
    expect(e).toBeInstanceOf(KubeApiError);
    expect(e).toMatchObject({ status: code, reason, transient: true, message: 'try later' });
  });

  it.each([
    [400, 'BadRequest'],
    [403, 'Forbidden'],
    [404, 'NotFound'],
    [410, 'Expired'],
    [415, 'UnsupportedMediaType'],
    [422, 'Invalid'],
  ])('%i %s is permanent', (code, reason) => {
    expect(classify(apiException(code, status(code, reason, 'no')))).toMatchObject({
      status: code,
      reason,
      transient: false,
    });
  });

  it('keeps the Kubernetes Status message as the message', () => {
    const msg =
      'Deployment.apps "Bad_Name" is invalid: metadata.name: Invalid value: "Bad_Name": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters';
    const e = classify(apiException(422, status(422, 'Invalid', msg)), {
      verb: 'create',
      resource: 'deployments',
      namespace: 'cf',
      name: 'Bad_Name',
    });
    expect(e.message).toBe(msg);
    expect(e.operation).toBe('create deployments cf/Bad_Name');
  });

  it("keeps a 422's field causes, and none when the Status lists none", () => {
    const cause = { reason: 'FieldValueInvalid', field: 'spec.x', message: 'Invalid value: "a": no' };
    const e = classify(apiException(422, status(422, 'Invalid', 'bad', { causes: [cause, { field: 'y' }] })));
    expect(e.causes).toEqual([{ field: 'spec.x', message: 'Invalid value: "a": no' }]);
    expect(classify(apiException(422, status(422, 'Invalid', 'bad'))).causes).toBeUndefined();
  });

  it('gives 401 (thrown by client-node without a body) its reason', () => {
    expect(classify(apiException(401, undefined))).toMatchObject({
      status: 401,
      reason: 'Unauthorized',
      transient: false,
      message: 'HTTP 401 Unauthorized',
    });
  });

  it('splits 409 into AlreadyExists (permanent) and Conflict (transient)', () => {
    const exists = classify(
      apiException(409, status(409, 'AlreadyExists', 'deployments.apps "web" already exists')),
    );
    expect(exists).toBeInstanceOf(AlreadyExistsError);
    expect(exists).toMatchObject({ status: 409, reason: 'AlreadyExists', transient: false });
    const conflict = classify(
      apiException(409, status(409, 'Conflict', 'Operation cannot be fulfilled on deployments.apps "web"')),
    );
    expect(conflict).toBeInstanceOf(ConflictError);
    expect(conflict).toMatchObject({ status: 409, reason: 'Conflict', transient: true });
    // A 409 with no Status body is a conflict too.
    expect(classify(apiException(409, ''))).toBeInstanceOf(ConflictError);
  });

  it('reads Retry-After from the header, as seconds or a date', () => {
    expect(
      classify(apiException(429, status(429, 'TooManyRequests', 'slow'), { 'retry-after': '7' })),
    ).toMatchObject({ retryAfterSeconds: 7, transient: true });
    const in5s = new Date(Date.now() + 5_000).toUTCString();
    const e = classify(apiException(503, status(503, 'ServiceUnavailable', 'x'), { 'Retry-After': in5s }));
    expect(e.retryAfterSeconds).toBeGreaterThanOrEqual(3);
    expect(e.retryAfterSeconds).toBeLessThanOrEqual(6);
  });

  it('falls back to details.retryAfterSeconds', () => {
    const e = classify(apiException(429, status(429, 'TooManyRequests', 'slow', { retryAfterSeconds: 3 })));
    expect(e.retryAfterSeconds).toBe(3);
  });

  it('cuts a body that is not a Status (e.g. from a proxy) and keeps its status', () => {
    const e = classify(apiException(502, `<html>${'x'.repeat(5000)}</html>`));
    expect(e).toMatchObject({ status: 502, reason: 'InternalError', transient: true });
    expect(e.message.length).toBeLessThanOrEqual(300);
  });

  it('never carries request headers or bodies into the message', () => {
    const err = apiException(403, status(403, 'Forbidden', 'secrets "s" is forbidden'), {
      'content-type': 'application/json',
    });
    // What a careless wrapper might attach; none of it may surface.
    Object.assign(err, {
      request: {
        headers: { Authorization: 'Bearer sekret-token' },
        body: '{"data":{"password":"aHVudGVyMg=="}}',
      },
    });
    const e = classify(err);
    expect(JSON.stringify({ ...e, message: e.message })).not.toMatch(/sekret|aHVudGVyMg|Authorization/);
  });
});

describe('classify: no answer', () => {
  it.each([
    ['ECONNREFUSED', 'ConnectionRefused'],
    ['ECONNRESET', 'ConnectionReset'],
    ['ETIMEDOUT', 'Timeout'],
    ['EPIPE', 'ConnectionReset'],
    ['EAI_AGAIN', 'DNSFailure'],
  ])('%s is transient (%s)', (code, reason) => {
    expect(classify(systemError(code))).toMatchObject({ status: undefined, reason, transient: true });
  });

  it('recognises node-fetch FetchErrors by their message and type', () => {
    const hangUp = Object.assign(
      new Error('request to http://127.0.0.1:1/api/v1/namespaces/x/pods failed, reason: socket hang up'),
      { name: 'FetchError', type: 'system' },
    );
    expect(classify(hangUp)).toMatchObject({ reason: 'ConnectionReset', transient: true });
    const other = Object.assign(new Error('request failed, reason: weird'), {
      name: 'FetchError',
      type: 'system',
    });
    expect(classify(other)).toMatchObject({ reason: 'NetworkError', transient: true });
    // Our wording, not node-fetch's (which embeds the URL).
    expect(classify(hangUp).message).not.toContain('http://');
  });

  it('treats aborts and time-outs as transient', () => {
    const aborted = Object.assign(new Error('The user aborted a request.'), {
      name: 'AbortError',
      type: 'aborted',
    });
    expect(classify(aborted)).toMatchObject({ reason: 'Timeout', transient: true });
    const ours = classify(requestTimeoutError(250));
    expect(ours).toMatchObject({ reason: 'Timeout', transient: true, message: 'no answer within 250 ms' });
    expect(classify(new DOMException('signal timed out', 'TimeoutError'))).toMatchObject({ transient: true });
  });

  it('treats a programming error as permanent', () => {
    expect(classify(new TypeError("Cannot read properties of undefined (reading 'x')"))).toMatchObject({
      status: undefined,
      reason: 'ClientError',
      transient: false,
    });
    expect(classify('a string')).toMatchObject({ transient: false, message: 'a string' });
  });

  it('passes a KubeApiError through', () => {
    const e = new ConflictError({ message: 'stale' });
    expect(classify(e)).toBe(e);
  });
});

describe('missingNamespace', () => {
  const notFound = (message: string) =>
    new KubeApiError({ status: 404, reason: 'NotFound', transient: false, message });

  it('names the namespace of a 404 that says the namespace is missing', () => {
    expect(missingNamespace(notFound('namespaces "cf-workloads" not found'))).toBe('cf-workloads');
  });

  it('is undefined for any other error', () => {
    expect(missingNamespace(notFound('deployments.apps "web" not found'))).toBeUndefined();
    expect(
      missingNamespace(
        new KubeApiError({
          status: 403,
          reason: 'Forbidden',
          transient: false,
          message: 'namespaces "x" not found',
        }),
      ),
    ).toBeUndefined();
    expect(missingNamespace(new Error('namespaces "x" not found'))).toBeUndefined();
  });
});
