/**
 * Lists read page by page, as a real apiserver serves them: keys in sorted `namespace/name` order, a
 * continue token naming the first page's version and the last key sent, and later pages read at that
 * version (objects changed or deleted since are read as they were, from the event history).
 */
import { errors } from './errors.js';
import type { ResourceType } from './resources.js';
import type { FieldRequirement, Requirement } from './selectors.js';
import type { EventHistory, StoreEvent } from './store-history.js';
import type { KubeObject } from './types.js';

export interface ListQuery {
  namespace?: string | undefined;
  labels?: Requirement[];
  fields?: FieldRequirement[];
  limit?: number | undefined;
  continueToken?: string | undefined;
}

export interface ListResult {
  items: KubeObject[];
  resourceVersion: string;
  continueToken?: string;
  remainingItemCount?: number;
}

/** One type's objects as a list reads them. */
export interface ListSource {
  resource: ResourceType;
  /** The store's resourceVersion now. */
  rv: number;
  /** The type's keys now, sorted. */
  keys: string[];
  objects: Map<string, KubeObject>;
  history: EventHistory;
  /** Whether the list asks for this object (namespace and selectors). */
  matches(o: KubeObject): boolean;
}

/** The store's key of an object: `namespace/name`, or the name alone for a cluster-scoped one. */
export function objectKey(namespace: string | undefined, name: string): string {
  return namespace ? `${namespace}/${name}` : name;
}

/** Where `key` is, or would go, in sorted `keys`: the first index not before it. */
export function lowerBound(keys: string[], key: string): number {
  let lo = 0;
  let hi = keys.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if ((keys[mid] as string) < key) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

function upperBound(keys: string[], key: string): number {
  let lo = 0;
  let hi = keys.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if ((keys[mid] as string) <= key) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

const CONTINUE_EXPIRED =
  'The provided continue parameter is too old to display a consistent list result. You can start a new list without the continue parameter, or use the continue token in this response to retrieve the remainder of the results. Continuing with the provided token results in an inconsistent list - objects that were created, modified, or deleted between the time the first chunk was returned and now may show up in the list.';

interface ContinueToken {
  rv: number;
  start: string;
}

function encodeContinue(t: ContinueToken): string {
  return Buffer.from(JSON.stringify({ v: 'meta.k8s.io/v1', rv: t.rv, start: t.start })).toString('base64url');
}

function decodeContinue(s: string): ContinueToken {
  try {
    const parsed = JSON.parse(Buffer.from(s, 'base64url').toString('utf8')) as {
      rv?: unknown;
      start?: unknown;
    };
    if (typeof parsed.rv === 'number' && typeof parsed.start === 'string')
      return { rv: parsed.rv, start: parsed.start };
  } catch {
    // fall through
  }
  throw errors.badRequest(`invalid continue token: ${s.slice(0, 64)}`);
}

/**
 * The objects of one type that changed after `rv`, as they were at `rv` (undefined: absent then), from
 * the history: what a continue token's later pages read, as etcd serves them at the token's revision.
 */
function stateAt(source: ListSource, rv: number): Map<string, KubeObject | undefined> {
  const then = new Map<string, KubeObject | undefined>();
  if (rv >= source.rv) return then;
  let events: StoreEvent[];
  try {
    events = source.history.since(rv);
  } catch {
    throw errors.expired(CONTINUE_EXPIRED);
  }
  for (const e of events) {
    if (e.resource !== source.resource) continue;
    const key = objectKey(e.object.metadata.namespace, e.object.metadata.name);
    // The first change after rv tells what the key held at rv.
    if (!then.has(key)) then.set(key, e.type === 'ADDED' ? undefined : e.previous);
  }
  return then;
}

/** One page of a list (the first, or the one a continue token names). */
export function readPage(source: ListSource, q: ListQuery): ListResult {
  const { resource, keys, objects: bucket } = source;
  let snapshotRv = source.rv;
  let after: string | undefined;
  // Keys changed since the snapshot, with what they held then (undefined: absent then).
  let then: Map<string, KubeObject | undefined> | undefined;
  if (q.continueToken) {
    const token = decodeContinue(q.continueToken);
    if (token.rv < source.history.compactedRv) throw errors.expired(CONTINUE_EXPIRED);
    snapshotRv = token.rv;
    after = token.start;
    then = stateAt(source, snapshotRv);
  }
  // Objects deleted since the snapshot still belong to its later pages, as on a real apiserver.
  const gone = then
    ? [...then]
        .filter(([key, o]) => o !== undefined && !bucket.has(key))
        .map(([key]) => key)
        .sort()
    : [];
  const prefix = resource.namespaced && q.namespace ? `${q.namespace}/` : '';
  const start = (list: string[]): number =>
    after !== undefined ? upperBound(list, after) : prefix ? lowerBound(list, prefix) : 0;
  let i = start(keys);
  let j = start(gone);
  // The next key of both sorted lists merged, and a step past it.
  const peek = (): string | undefined => {
    const a = keys[i];
    const b = gone[j];
    if (a === undefined) return b;
    return b === undefined || a < b ? a : b;
  };
  const step = (key: string): void => {
    if (keys[i] === key) i++;
    else j++;
  };
  const objectAt = (key: string): KubeObject | undefined =>
    then?.has(key) ? then.get(key) : bucket.get(key);
  const limit = q.limit && q.limit > 0 ? q.limit : Infinity;
  const items: KubeObject[] = [];
  let lastKey: string | undefined;
  for (let key = peek(); key !== undefined; key = peek()) {
    if (prefix && !key.startsWith(prefix)) break;
    const o = objectAt(key);
    if (o && source.matches(o)) {
      if (items.length === limit) break;
      items.push(o);
      lastKey = key;
    }
    step(key);
  }
  const result: ListResult = { items, resourceVersion: String(snapshotRv) };
  // More remain if the loop stopped early at a matching object.
  if (items.length === limit && lastKey !== undefined) {
    let remaining = 0;
    for (let key = peek(); key !== undefined; key = peek()) {
      if (prefix && !key.startsWith(prefix)) break;
      const o = objectAt(key);
      if (o && source.matches(o)) remaining++;
      step(key);
    }
    if (remaining > 0) {
      result.continueToken = encodeContinue({ rv: snapshotRv, start: lastKey });
      if (!q.labels?.length && !q.fields?.length) result.remainingItemCount = remaining;
    }
  }
  return result;
}
