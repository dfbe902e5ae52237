/** Callback URL handling: validation, redaction for messages, Basic credentials, Retry-After. */
import { CallbackUrlError } from './errors.js';

/** Parses and checks a callback URL. The error never echoes the input, which may hold credentials. */
export function parseCallbackUrl(raw: string): URL {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    // Node's TypeError carries the whole input (`input` property): do not chain it.
    throw new CallbackUrlError('callback URL is not a valid absolute URL');
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw new CallbackUrlError(`callback URL must use http or https, not ${url.protocol}`);
  }
  return url;
}

/**
 * The URL as it may appear in messages and logs: scheme, host and path. Userinfo goes (CC's internal API
 * takes Basic credentials in the URL) and so does the query, which nothing in the contract needs to show.
 */
export function redactUrl(url: URL | string): string {
  let u: URL;
  try {
    u = typeof url === 'string' ? new URL(url) : url;
  } catch {
    return '<invalid URL>';
  }
  return `${u.protocol}//${u.host}${u.pathname}`;
}

/** `user:password` for the request's Basic auth, decoded, or undefined when the URL has no userinfo. */
export function basicAuthOf(url: URL): string | undefined {
  if (url.username === '' && url.password === '') return undefined;
  try {
    return `${decodeURIComponent(url.username)}:${decodeURIComponent(url.password)}`;
  } catch {
    throw new CallbackUrlError(
      `callback URL ${redactUrl(url)} has malformed percent-encoding in its userinfo`,
    );
  }
}

/**
 * Seconds to wait from a Retry-After header: delta-seconds or an HTTP-date (RFC 9110 §10.2.3). Anything
 * else is ignored rather than guessed at, so the queue's own backoff applies.
 */
export function parseRetryAfter(value: string | undefined, now: number = Date.now()): number | undefined {
  if (value === undefined) return undefined;
  const v = value.trim();
  if (/^\d+$/.test(v)) return Number(v);
  // Date.parse accepts bare numbers such as "1.5"; an HTTP-date always names a day or month.
  if (!/[a-z]/i.test(v)) return undefined;
  const at = Date.parse(v);
  if (Number.isNaN(at)) return undefined;
  return Math.max(0, Math.ceil((at - now) / 1000));
}

/** How a CC status is treated: 408 and 429 are "not now" even though they are 4xx. */
export function classifyStatus(status: number): 'delivered' | 'rejected' | 'unavailable' {
  if (status >= 200 && status < 300) return 'delivered';
  if (status === 408 || status === 429) return 'unavailable';
  // 3xx is not followed: CC's internal API never redirects, and the same URL would redirect again.
  if (status >= 300 && status < 500) return 'rejected';
  return 'unavailable';
}
