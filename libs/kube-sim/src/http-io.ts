/**
 * Reading requests and writing answers, shared by every endpoint: JSON bodies within a size limit, JSON
 * and `Status` replies, and the query parameters that several verbs read the same way.
 */
import type http from 'node:http';
import { StatusError, errors } from './errors.js';
import type { ListQuery } from './store.js';
import { parseFieldSelector, parseLabelSelector } from './selectors.js';

export type Res = http.ServerResponse;

export const JSON_TYPE = 'application/json';

export function send(res: Res, code: number, body: unknown, headers: Record<string, string> = {}): void {
  const text = JSON.stringify(body);
  res.writeHead(code, { 'Content-Type': JSON_TYPE, 'Content-Length': Buffer.byteLength(text), ...headers });
  res.end(text);
}

export function sendError(res: Res, err: StatusError): void {
  const headers: Record<string, string> = {};
  const retry = err.details?.retryAfterSeconds;
  if (retry !== undefined) headers['Retry-After'] = String(retry);
  send(res, err.code, err.toStatus(), headers);
}

/** A `Status` of success, with what the answer adds (its code or details). */
export function successStatus(extra: Record<string, unknown>): Record<string, unknown> {
  return { kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Success', ...extra };
}

export async function readBody(req: http.IncomingMessage, maxBytes = 3 * 1024 * 1024): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    const b = chunk as Buffer;
    size += b.length;
    if (size > maxBytes)
      throw new StatusError(
        413,
        'RequestEntityTooLarge',
        'the server has received too large a request entity',
      );
    chunks.push(b);
  }
  return Buffer.concat(chunks).toString('utf8');
}

/** The body as JSON; undefined when it is empty. */
export async function readJson(req: http.IncomingMessage, maxBytes?: number): Promise<unknown> {
  const text = await readBody(req, maxBytes);
  if (!text.trim()) return undefined;
  try {
    return JSON.parse(text) as unknown;
  } catch (e) {
    throw errors.badRequest(
      `the object provided is unrecognized: ${e instanceof Error ? e.message : String(e)}`,
    );
  }
}

export function intParam(q: URLSearchParams, name: string): number | undefined {
  const v = q.get(name);
  if (v === null || v === '') return undefined;
  const n = Number(v);
  if (!Number.isInteger(n)) throw errors.badRequest(`invalid value for ${name}: ${v}`);
  return n;
}

export function boolParam(q: URLSearchParams, name: string): boolean {
  const v = q.get(name);
  return v === 'true' || v === '1';
}

export function dryRun(q: URLSearchParams): boolean {
  const v = q.getAll('dryRun');
  if (v.some((x) => x !== 'All')) throw errors.badRequest(`Invalid dry run value: ${v.join(',')}`);
  return v.length > 0;
}

/** The namespace and label/field selectors that a list and a watch both filter by. */
export function selectorQuery(namespace: string | undefined, q: URLSearchParams): ListQuery {
  return {
    namespace,
    labels: parseLabelSelector(q.get('labelSelector') ?? ''),
    fields: parseFieldSelector(q.get('fieldSelector') ?? ''),
  };
}

/** A list's query: the selectors plus its page (`limit`, `continue`). */
export function listQuery(namespace: string | undefined, q: URLSearchParams): ListQuery {
  return {
    ...selectorQuery(namespace, q),
    limit: intParam(q, 'limit'),
    continueToken: q.get('continue') ?? undefined,
  };
}
