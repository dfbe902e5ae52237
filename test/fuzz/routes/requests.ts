/**
 * What every route's cases are made of: the guids they share, path segments as sent (percent-encoded or
 * raw), and requests as CC sends them.
 */
import { randomUUID } from 'node:crypto';
import fc from 'fast-check';
import { type Body, type RawBody, anyName } from '../arbitraries.js';
import type { RawRequest } from '../raw-http.js';

/** A few LRPs, tasks and stagings that requests share, so updates, stops and gets meet existing ones. */
export const POOL = Array.from({ length: 4 }, () => ({ guid: randomUUID(), version: randomUUID() }));
export const TASK_POOL = Array.from({ length: 4 }, () => randomUUID());

/** What a request is about, for the checks after it. */
export type Intent = { route: 'desire'; body?: Body } | { route: 'update' | 'task' | 'stage' | 'other' };

export interface Case {
  request: RawRequest;
  intent: Intent;
}

/** Percent-encodes the UTF-8 bytes of `s` (encodeURIComponent throws on a lone surrogate). */
export function pct(s: string): string {
  let out = '';
  for (const b of Buffer.from(s, 'utf8')) {
    const c = String.fromCharCode(b);
    out += /[A-Za-z0-9\-_.~]/.test(c) ? c : `%${b.toString(16).toUpperCase().padStart(2, '0')}`;
  }
  return out;
}

/** A path segment: usually the proper value, else a hostile name, percent-encoded or raw. */
export function segment(proper: fc.Arbitrary<string>): fc.Arbitrary<string> {
  return fc.oneof(
    { arbitrary: proper.map(pct), weight: 6 },
    { arbitrary: anyName.map(pct), weight: 3 },
    // Raw: only what would end the request line is escaped; '/', '%', '..' and non-ASCII go as they are.
    { arbitrary: anyName.map((s) => s.replace(/[\s\0]/g, pct)), weight: 2 },
    { arbitrary: anyName, weight: 1 },
  );
}

export const poolPair = fc.constantFrom(...POOL);
export const guidPair = fc.oneof(poolPair, fc.record({ guid: fc.uuid(), version: fc.uuid() }));
export const jsonHeaders = (b: RawBody): [string, string][] => [
  ...(b.contentType === undefined ? [] : ([['Content-Type', b.contentType]] as [string, string][])),
  ...(b.contentEncoding === undefined
    ? []
    : ([['Content-Encoding', b.contentEncoding]] as [string, string][])),
];

export const JSON_TYPE: [string, string][] = [['Content-Type', 'application/json']];

/** A request as CC sends it: the proper path, JSON, no other headers. */
export function clean(method: string, path: string, body: Body, intent: Intent): Case {
  return { request: { method, path, headers: JSON_TYPE, body: Buffer.from(JSON.stringify(body)) }, intent };
}
