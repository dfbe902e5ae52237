/**
 * The simulated etcd + generic registry: objects of every type, one resourceVersion counter across them
 * all, a bounded event history for watch resume (older versions get 410 Expired, as after an etcd
 * compaction), and the write semantics every type shares (uid, generation, status split, optimistic
 * concurrency, finalizers and deletionTimestamp, dry run).
 *
 * Stored objects are never mutated: every write stores a new object, so list results, watch events and
 * history entries can share references safely. Callers that want to change an object clone it first.
 */
import { randomUUID } from 'node:crypto';
import { StatusError, errors } from './errors.js';
import { applyDefaults, validateObject } from './kinds.js';
import { type ResourceRegistry, type ResourceType, typeKey } from './resources.js';
import {
  type FieldRequirement,
  type Requirement,
  matchesFieldSelector,
  matchesRequirements,
} from './selectors.js';
import type { KubeObject, ObjectMeta } from './types.js';
import { generatedName } from './validation.js';

export type EventType = 'ADDED' | 'MODIFIED' | 'DELETED';

export interface StoreEvent {
  type: EventType;
  rv: number;
  resource: ResourceType;
  object: KubeObject;
  /** The object before this change (absent on ADDED). */
  previous?: KubeObject;
}

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

export interface WriteOptions {
  dryRun?: boolean;
}

export interface DeleteOptions extends WriteOptions {
  propagationPolicy?: 'Background' | 'Foreground' | 'Orphan' | undefined;
  orphanDependents?: boolean | undefined;
  gracePeriodSeconds?: number | undefined;
  preconditions?: { uid?: string | undefined; resourceVersion?: string | undefined } | undefined;
}

export interface DeleteResult {
  object: KubeObject;
  /** false while finalizers or a grace period hold the object. */
  removed: boolean;
}

export interface StoreOptions {
  /** Events kept for watch resume; older resourceVersions get 410. */
  historySize?: number;
  now?: () => number;
  random?: () => number;
}

export const FOREGROUND_FINALIZER = 'foregroundDeletion';
export const ORPHAN_FINALIZER = 'orphan';

function timestamp(ms: number): string {
  return new Date(ms).toISOString().replace(/\.\d{3}Z$/, 'Z');
}

function objectKey(namespace: string | undefined, name: string): string {
  return namespace ? `${namespace}/${name}` : name;
}

const CONTINUE_EXPIRED =
  'The provided continue parameter is too old to display a consistent list result. You can start a new list without the continue parameter, or use the continue token in this response to retrieve the remainder of the results. Continuing with the provided token results in an inconsistent list - objects that were created, modified, or deleted between the time the first chunk was returned and now may show up in the list.';

function sameJson(a: unknown, b: unknown): boolean {
  return JSON.stringify(a) === JSON.stringify(b);
}

export class Store {
  private rv = 1;
  private readonly objects = new Map<string, Map<string, KubeObject>>();
  private readonly sorted = new Map<string, string[]>();
  private readonly byUid = new Map<string, { resource: ResourceType; key: string }>();
  /** owner uid → `${typeKey}|${objectKey}` of its dependents */
  private readonly dependents = new Map<string, Set<string>>();
  private history: StoreEvent[] = [];
  /** Watches may resume from any rv ≥ this. */
  private watchHorizon = 0;
  /** Continue tokens and watches older than this get 410 (set by compact()). */
  private compactedRv = 0;
  private readonly listeners = new Set<(e: StoreEvent) => void>();
  private readonly historySize: number;
  readonly now: () => number;
  readonly random: () => number;

  constructor(
    readonly registry: ResourceRegistry,
    options: StoreOptions = {},
  ) {
    this.historySize = options.historySize ?? 50_000;
    this.now = options.now ?? Date.now;
    this.random = options.random ?? Math.random;
  }

  get resourceVersion(): string {
    return String(this.rv);
  }

  /** Listens to every committed change, in order, synchronously. Returns an unsubscribe function. */
  subscribe(listener: (e: StoreEvent) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  private bucket(resource: ResourceType): Map<string, KubeObject> {
    const k = typeKey(resource);
    let m = this.objects.get(k);
    if (!m) {
      m = new Map();
      this.objects.set(k, m);
    }
    return m;
  }

  get(resource: ResourceType, namespace: string | undefined, name: string): KubeObject | undefined {
    return this.objects
      .get(typeKey(resource))
      ?.get(objectKey(resource.namespaced ? namespace : undefined, name));
  }

  mustGet(resource: ResourceType, namespace: string | undefined, name: string): KubeObject {
    const o = this.get(resource, namespace, name);
    if (!o) throw errors.notFound(resource.plural, resource.group, name);
    return o;
  }

  getByUid(uid: string): { resource: ResourceType; object: KubeObject } | undefined {
    const ref = this.byUid.get(uid);
    if (!ref) return undefined;
    const object = this.objects.get(typeKey(ref.resource))?.get(ref.key);
    return object ? { resource: ref.resource, object } : undefined;
  }

  /** Objects whose ownerReferences name this uid. */
  dependentsOf(uid: string): { resource: ResourceType; object: KubeObject }[] {
    const out: { resource: ResourceType; object: KubeObject }[] = [];
    for (const ref of this.dependents.get(uid) ?? []) {
      const bar = ref.indexOf('|');
      const tk = ref.slice(0, bar);
      const o = this.objects.get(tk)?.get(ref.slice(bar + 1));
      const resource = this.registry.types.find((t) => typeKey(t) === tk);
      if (o && resource) out.push({ resource, object: o });
    }
    return out;
  }

  count(resource?: ResourceType): number {
    if (resource) return this.objects.get(typeKey(resource))?.size ?? 0;
    let n = 0;
    for (const m of this.objects.values()) n += m.size;
    return n;
  }

  private sortedKeys(resource: ResourceType): string[] {
    const k = typeKey(resource);
    let keys = this.sorted.get(k);
    if (!keys) {
      keys = [...this.bucket(resource).keys()].sort();
      this.sorted.set(k, keys);
    }
    return keys;
  }

  /** Checks a field selector against the fields this type supports; unknown fields are a 400, as upstream. */
  checkFields(resource: ResourceType, fields: FieldRequirement[]): void {
    for (const f of fields) {
      if (f.field === 'metadata.name' || f.field === 'metadata.namespace') continue;
      if (!resource.fields?.[f.field]) throw errors.badRequest(`field label not supported: ${f.field}`);
    }
  }

  matches(resource: ResourceType, o: KubeObject, q: ListQuery): boolean {
    if (resource.namespaced && q.namespace && o.metadata.namespace !== q.namespace) return false;
    if (q.labels?.length && !matchesRequirements(o.metadata.labels, q.labels)) return false;
    if (q.fields?.length) {
      const get = (field: string): string | undefined => {
        if (field === 'metadata.name') return o.metadata.name;
        if (field === 'metadata.namespace') return o.metadata.namespace ?? '';
        return resource.fields?.[field]?.(o);
      };
      if (!matchesFieldSelector(get, q.fields)) return false;
    }
    return true;
  }

  list(resource: ResourceType, q: ListQuery = {}): ListResult {
    if (q.fields) this.checkFields(resource, q.fields);
    let snapshotRv = this.rv;
    let after: string | undefined;
    // Keys changed since the snapshot, with what they held then (undefined: absent then).
    let then: Map<string, KubeObject | undefined> | undefined;
    if (q.continueToken) {
      const token = decodeContinue(q.continueToken);
      if (token.rv < this.compactedRv) throw errors.expired(CONTINUE_EXPIRED);
      snapshotRv = token.rv;
      after = token.start;
      then = this.stateAt(resource, snapshotRv);
    }
    const bucket = this.bucket(resource);
    const keys = this.sortedKeys(resource);
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
      if (o && this.matches(resource, o, q)) {
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
        if (o && this.matches(resource, o, q)) remaining++;
        step(key);
      }
      if (remaining > 0) {
        result.continueToken = encodeContinue({ rv: snapshotRv, start: lastKey });
        if (!q.labels?.length && !q.fields?.length) result.remainingItemCount = remaining;
      }
    }
    return result;
  }

  /**
   * The objects of one type that changed after `rv`, as they were at `rv` (undefined: absent then), from
   * the history: what a continue token's later pages read, as etcd serves them at the token's revision.
   */
  private stateAt(resource: ResourceType, rv: number): Map<string, KubeObject | undefined> {
    const then = new Map<string, KubeObject | undefined>();
    if (rv >= this.rv) return then;
    let events: StoreEvent[];
    try {
      events = this.eventsSince(rv);
    } catch {
      throw errors.expired(CONTINUE_EXPIRED);
    }
    for (const e of events) {
      if (e.resource !== resource) continue;
      const key = objectKey(e.object.metadata.namespace, e.object.metadata.name);
      // The first change after rv tells what the key held at rv.
      if (!then.has(key)) then.set(key, e.type === 'ADDED' ? undefined : e.previous);
    }
    return then;
  }

  private checkNamespace(resource: ResourceType, namespace: string | undefined): void {
    if (!resource.namespaced) return;
    if (!namespace)
      throw errors.badRequest(
        'the namespace of the provided object does not match the namespace sent on the request',
      );
    const nsType = this.registry.get('', 'namespaces');
    const ns = this.get(nsType, undefined, namespace);
    if (!ns) throw errors.notFound('namespaces', '', namespace);
    if (ns.metadata.deletionTimestamp) {
      throw new StatusError(
        403,
        'Forbidden',
        `${resource.plural} is forbidden: unable to create new content in namespace ${namespace} because it is being terminated`,
      );
    }
  }

  create(resource: ResourceType, body: KubeObject, options: WriteOptions = {}): KubeObject {
    const meta = body.metadata;
    const namespace = resource.namespaced ? meta.namespace : undefined;
    this.checkNamespace(resource, namespace);
    let name = meta.name;
    if (!name && meta.generateName) {
      name = generatedName(meta.generateName, this.random);
      if (this.get(resource, namespace, name)) {
        const e = errors.alreadyExists(resource.plural, resource.group, name);
        throw new StatusError(
          409,
          'AlreadyExists',
          `${e.message}, the server was not able to generate a unique name for the object`,
          {
            ...e.details,
            retryAfterSeconds: 1,
          },
        );
      }
    }
    const now = this.now();
    const o: KubeObject = {
      ...body,
      apiVersion: body.apiVersion,
      kind: body.kind,
      metadata: {
        ...meta,
        name: name ?? '',
        uid: randomUUID(),
        resourceVersion: '',
        creationTimestamp: timestamp(now),
        ...(namespace ? { namespace } : {}),
      },
    };
    delete o.metadata.deletionTimestamp;
    delete o.metadata.deletionGracePeriodSeconds;
    if (!resource.namespaced) delete o.metadata.namespace;
    if (resource.hasStatus && resource.kind !== 'Namespace') delete o['status'];
    // Spec-carrying kinds count spec changes; pods (of the versions we mirror) carry no generation.
    const counted = resource.hasStatus && resource.kind !== 'Pod';
    if (counted) o.metadata.generation = 1;
    applyDefaults(resource, o, true);
    const causes = validateObject(resource, o);
    if (causes.length) throw errors.invalid(resource.kind, resource.group, o.metadata.name, causes);
    if (this.get(resource, namespace, o.metadata.name)) {
      throw errors.alreadyExists(resource.plural, resource.group, o.metadata.name);
    }
    if (options.dryRun) return { ...o, metadata: { ...o.metadata, resourceVersion: String(this.rv) } };
    return this.commit(resource, 'ADDED', o, undefined);
  }

  /**
   * PUT semantics. `subresource: 'status'` keeps everything but .status; the main resource keeps .status
   * for types that have one. A stale metadata.resourceVersion is a 409 Conflict.
   */
  replace(
    resource: ResourceType,
    body: KubeObject,
    options: WriteOptions & { subresource?: 'status' } = {},
  ): KubeObject {
    const namespace = resource.namespaced ? body.metadata.namespace : undefined;
    const old = this.mustGet(resource, namespace, body.metadata.name);
    const wantRv = body.metadata.resourceVersion;
    if (wantRv && wantRv !== old.metadata.resourceVersion) {
      throw errors.conflict(resource.plural, resource.group, old.metadata.name);
    }
    if (body.metadata.uid && body.metadata.uid !== old.metadata.uid) {
      throw errors.conflict(
        resource.plural,
        resource.group,
        old.metadata.name,
        `Precondition failed: UID in precondition: ${body.metadata.uid}, UID in object meta: ${old.metadata.uid}`,
      );
    }
    let next: KubeObject;
    if (options.subresource === 'status') {
      next = { ...old, metadata: { ...old.metadata }, status: body['status'] };
    } else {
      next = { ...body, apiVersion: old.apiVersion, kind: old.kind, metadata: { ...body.metadata } };
      if (resource.hasStatus) {
        if (old['status'] === undefined) delete next['status'];
        else next['status'] = old['status'];
      }
      const m: ObjectMeta = next.metadata;
      m.uid = old.metadata.uid;
      m.name = old.metadata.name;
      m.creationTimestamp = old.metadata.creationTimestamp;
      if (old.metadata.namespace) m.namespace = old.metadata.namespace;
      else delete m.namespace;
      if (old.metadata.generation !== undefined) m.generation = old.metadata.generation;
      else delete m.generation;
      if (old.metadata.deletionTimestamp) {
        m.deletionTimestamp = old.metadata.deletionTimestamp;
        if (old.metadata.deletionGracePeriodSeconds !== undefined) {
          m.deletionGracePeriodSeconds = old.metadata.deletionGracePeriodSeconds;
        }
      } else {
        delete m.deletionTimestamp;
        delete m.deletionGracePeriodSeconds;
      }
      applyDefaults(resource, next, false);
      if (old.metadata.generation !== undefined && !sameJson(old['spec'], next['spec'])) {
        m.generation = (old.metadata.generation ?? 0) + 1;
      }
      const causes = validateObject(resource, next, old);
      if (causes.length) throw errors.invalid(resource.kind, resource.group, old.metadata.name, causes);
    }
    next.metadata.resourceVersion = old.metadata.resourceVersion;
    // A write that changes nothing is not a write: no new resourceVersion, no watch event (as upstream).
    if (sameJson(next, old)) return old;
    if (options.dryRun) return next;
    if (next.metadata.deletionTimestamp && !next.metadata.finalizers?.length) {
      return this.remove(resource, next);
    }
    return this.commit(resource, 'MODIFIED', next, old);
  }

  delete(
    resource: ResourceType,
    namespace: string | undefined,
    name: string,
    options: DeleteOptions = {},
  ): DeleteResult {
    const old = this.mustGet(resource, namespace, name);
    const pre = options.preconditions;
    if (pre?.uid && pre.uid !== old.metadata.uid) {
      throw errors.conflict(
        resource.plural,
        resource.group,
        name,
        `Precondition failed: UID in precondition: ${pre.uid}, UID in object meta: ${old.metadata.uid}`,
      );
    }
    if (pre?.resourceVersion && pre.resourceVersion !== old.metadata.resourceVersion) {
      throw errors.conflict(
        resource.plural,
        resource.group,
        name,
        `Precondition failed: ResourceVersion in precondition: ${pre.resourceVersion}, ResourceVersion in object meta: ${old.metadata.resourceVersion}`,
      );
    }
    if (options.dryRun) return { object: old, removed: false };

    const policy =
      options.propagationPolicy ??
      (options.orphanDependents === true
        ? 'Orphan'
        : options.orphanDependents === false
          ? 'Background'
          : resource.defaultPropagation);
    const finalizers = [...(old.metadata.finalizers ?? [])];
    const hasDependents = (this.dependents.get(old.metadata.uid)?.size ?? 0) > 0;
    if (policy === 'Foreground' && hasDependents && !finalizers.includes(FOREGROUND_FINALIZER)) {
      finalizers.push(FOREGROUND_FINALIZER);
    }
    if (policy === 'Orphan' && hasDependents && !finalizers.includes(ORPHAN_FINALIZER))
      finalizers.push(ORPHAN_FINALIZER);

    // Pods on a node are deleted gracefully: the kubelet stops the containers, then removes the pod.
    if (resource.kind === 'Pod' && !resource.group) {
      const spec = old['spec'] as { nodeName?: string; terminationGracePeriodSeconds?: number } | undefined;
      const phase = (old['status'] as { phase?: string } | undefined)?.phase;
      const grace = options.gracePeriodSeconds ?? spec?.terminationGracePeriodSeconds ?? 30;
      const terminal = phase === 'Succeeded' || phase === 'Failed';
      if (grace > 0 && spec?.nodeName && !terminal) {
        const due = this.now() + grace * 1000;
        const current = old.metadata.deletionTimestamp
          ? Date.parse(old.metadata.deletionTimestamp)
          : Infinity;
        if (due >= current && sameJson(finalizers, old.metadata.finalizers ?? []))
          return { object: old, removed: false };
        const next: KubeObject = {
          ...old,
          metadata: {
            ...old.metadata,
            deletionTimestamp: timestamp(Math.min(due, current)),
            deletionGracePeriodSeconds: grace,
          },
        };
        if (finalizers.length) next.metadata.finalizers = finalizers;
        return { object: this.commit(resource, 'MODIFIED', next, old), removed: false };
      }
    }
    if (resource.kind === 'Namespace' && !resource.group) {
      // The namespace controller empties it, then removes it.
      if (old.metadata.deletionTimestamp) return { object: old, removed: false };
      const next: KubeObject = {
        ...old,
        metadata: {
          ...old.metadata,
          deletionTimestamp: timestamp(this.now()),
          deletionGracePeriodSeconds: 0,
        },
        status: { phase: 'Terminating' },
      };
      return { object: this.commit(resource, 'MODIFIED', next, old), removed: false };
    }
    if (finalizers.length) {
      if (old.metadata.deletionTimestamp && sameJson(finalizers, old.metadata.finalizers))
        return { object: old, removed: false };
      const next: KubeObject = {
        ...old,
        metadata: {
          ...old.metadata,
          finalizers,
          deletionTimestamp: old.metadata.deletionTimestamp ?? timestamp(this.now()),
          deletionGracePeriodSeconds: 0,
        },
      };
      return { object: this.commit(resource, 'MODIFIED', next, old), removed: false };
    }
    return { object: this.remove(resource, old), removed: true };
  }

  /** Removes a namespace once its content is gone (the namespace controller's last step). */
  finalizeNamespace(name: string): void {
    const nsType = this.registry.get('', 'namespaces');
    const ns = this.get(nsType, undefined, name);
    if (ns?.metadata.deletionTimestamp) this.remove(nsType, ns);
  }

  private remove(resource: ResourceType, o: KubeObject): KubeObject {
    const key = objectKey(o.metadata.namespace, o.metadata.name);
    const current = this.bucket(resource).get(key);
    if (!current) return o;
    this.rv++;
    const gone: KubeObject = { ...o, metadata: { ...o.metadata, resourceVersion: String(this.rv) } };
    this.bucket(resource).delete(key);
    const keys = this.sorted.get(typeKey(resource));
    if (keys) {
      const i = lowerBound(keys, key);
      if (keys[i] === key) keys.splice(i, 1);
    }
    this.byUid.delete(o.metadata.uid);
    // The owner's own dependents entry stays: the garbage collector still needs to find them.
    this.indexOwners(resource, key, current, undefined);
    this.emit({ type: 'DELETED', rv: this.rv, resource, object: gone, previous: current });
    return gone;
  }

  private commit(
    resource: ResourceType,
    type: 'ADDED' | 'MODIFIED',
    o: KubeObject,
    previous: KubeObject | undefined,
  ): KubeObject {
    this.rv++;
    o.metadata.resourceVersion = String(this.rv);
    const key = objectKey(o.metadata.namespace, o.metadata.name);
    const bucket = this.bucket(resource);
    if (!bucket.has(key)) {
      const keys = this.sorted.get(typeKey(resource));
      if (keys) keys.splice(lowerBound(keys, key), 0, key);
    }
    bucket.set(key, o);
    this.byUid.set(o.metadata.uid, { resource, key });
    this.indexOwners(resource, key, previous, o);
    const e: StoreEvent = { type, rv: this.rv, resource, object: o };
    if (previous) e.previous = previous;
    this.emit(e);
    return o;
  }

  private indexOwners(
    resource: ResourceType,
    key: string,
    before: KubeObject | undefined,
    after: KubeObject | undefined,
  ): void {
    const ref = `${typeKey(resource)}|${key}`;
    const was = new Set((before?.metadata.ownerReferences ?? []).map((r) => r.uid));
    const now = new Set((after?.metadata.ownerReferences ?? []).map((r) => r.uid));
    for (const uid of was) {
      if (now.has(uid)) continue;
      const s = this.dependents.get(uid);
      s?.delete(ref);
      if (s?.size === 0) this.dependents.delete(uid);
    }
    for (const uid of now) {
      if (was.has(uid)) continue;
      let s = this.dependents.get(uid);
      if (!s) {
        s = new Set();
        this.dependents.set(uid, s);
      }
      s.add(ref);
    }
  }

  private emit(e: StoreEvent): void {
    this.history.push(e);
    if (this.history.length > this.historySize * 2) {
      const drop = this.history.length - this.historySize;
      this.watchHorizon = (this.history[drop - 1]?.rv ?? this.watchHorizon) + 0;
      this.history = this.history.slice(drop);
    }
    for (const l of this.listeners) l(e);
  }

  /** Forgets the event history, as an etcd compaction does: older watches and continue tokens get 410. */
  compact(): void {
    this.history = [];
    this.watchHorizon = this.rv;
    this.compactedRv = this.rv;
  }

  /**
   * Events after `rv` for a watch resuming there; throws 410 Expired when they are no longer kept.
   * `rv` of the last event the client saw; history replay starts after it.
   */
  eventsSince(rv: number): StoreEvent[] {
    if (rv < this.watchHorizon) {
      throw errors.expired(`too old resource version: ${rv} (${this.watchHorizon + 1})`);
    }
    // History is ordered by rv; find the first event after rv.
    let lo = 0;
    let hi = this.history.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if ((this.history[mid]?.rv ?? 0) <= rv) lo = mid + 1;
      else hi = mid;
    }
    return this.history.slice(lo);
  }

  /** Every object of a type (no selector), for controllers. */
  all(resource: ResourceType, namespace?: string): KubeObject[] {
    const out: KubeObject[] = [];
    for (const o of this.bucket(resource).values()) {
      if (!namespace || o.metadata.namespace === namespace) out.push(o);
    }
    return out;
  }
}

function lowerBound(keys: string[], key: string): number {
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
