/**
 * The simulated etcd + generic registry: objects of every type, one resourceVersion counter across them
 * all, a bounded event history for watch resume (older versions get 410 Expired, as after an etcd
 * compaction), and the write semantics every type shares (uid, generation, status split, optimistic
 * concurrency, finalizers and deletionTimestamp, dry run).
 *
 * Stored objects are never mutated: every write stores a new object, so list results, watch events and
 * history entries can share references safely. Callers that want to change an object clone it first.
 *
 * Beside it: the event history (store-history.ts), paged lists (store-paging.ts), the owner index
 * (owner-index.ts) and what a delete does (store-deletion.ts).
 */
import { randomUUID } from 'node:crypto';
import { StatusError, errors } from './errors.js';
import { DEFAULT_MINOR_VERSION } from './discovery.js';
import { applyDefaults, validateObject } from './kinds.js';
import { OwnerIndex } from './owner-index.js';
import { type ResourceRegistry, type ResourceType, typeKey } from './resources.js';
import { type FieldRequirement, matchesFieldSelector, matchesRequirements } from './selectors.js';
import { type DeletionOptions, checkPreconditions, deletionOf } from './store-deletion.js';
import { EventHistory, type StoreEvent } from './store-history.js';
import { type ListQuery, type ListResult, lowerBound, objectKey, readPage } from './store-paging.js';
import { sameJson, timestamp } from './store-values.js';
import type { KubeObject, ObjectMeta } from './types.js';
import { admitPod } from './quota.js';
import { generatedName } from './validation.js';

export { FOREGROUND_FINALIZER, ORPHAN_FINALIZER } from './store-deletion.js';
export type { EventType, StoreEvent } from './store-history.js';
export type { ListQuery, ListResult } from './store-paging.js';

export interface WriteOptions {
  dryRun?: boolean;
}

export type DeleteOptions = WriteOptions & DeletionOptions;

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
  /** The Kubernetes minor version (1.x) played: /version, and validation that changed between versions. */
  minorVersion?: number;
}

/** How the owner index names a dependent: `${typeKey}|${objectKey}`. */
function dependentRef(resource: ResourceType, key: string): string {
  return `${typeKey(resource)}|${key}`;
}

export class Store {
  private rv = 1;
  private readonly objects = new Map<string, Map<string, KubeObject>>();
  private readonly sorted = new Map<string, string[]>();
  private readonly byUid = new Map<string, { resource: ResourceType; key: string }>();
  private readonly owners = new OwnerIndex();
  private readonly history: EventHistory;
  private readonly listeners = new Set<(e: StoreEvent) => void>();
  readonly now: () => number;
  readonly random: () => number;
  readonly minorVersion: number;

  constructor(
    readonly registry: ResourceRegistry,
    options: StoreOptions = {},
  ) {
    this.history = new EventHistory(options.historySize ?? 50_000);
    this.now = options.now ?? Date.now;
    this.random = options.random ?? Math.random;
    this.minorVersion = options.minorVersion ?? DEFAULT_MINOR_VERSION;
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
    for (const ref of this.owners.refsOf(uid)) {
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
    return readPage(
      {
        resource,
        rv: this.rv,
        keys: this.sortedKeys(resource),
        objects: this.bucket(resource),
        history: this.history,
        matches: (o) => this.matches(resource, o, q),
      },
      q,
    );
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
    // Spec-carrying kinds count spec changes; pods (of the versions we mirror) and quotas carry no generation.
    const counted = resource.hasStatus && resource.kind !== 'Pod' && resource.kind !== 'ResourceQuota';
    if (counted) o.metadata.generation = 1;
    applyDefaults(resource, o, true);
    const causes = validateObject(resource, o, undefined, this.minorVersion);
    if (causes.length) throw errors.invalid(resource.kind, resource.group, o.metadata.name, causes);
    // Validating admission runs after validation, before the name is taken (genericregistry Store.Create).
    if (resource.kind === 'Pod' && resource.group === '') this.admitPod(o, namespace ?? '');
    if (this.get(resource, namespace, o.metadata.name)) {
      throw errors.alreadyExists(resource.plural, resource.group, o.metadata.name);
    }
    if (options.dryRun) return { ...o, metadata: { ...o.metadata, resourceVersion: String(this.rv) } };
    return this.commit(resource, 'ADDED', o, undefined);
  }

  /** ResourceQuota admission (quota.ts); the error names the pod by its name, generated by now. */
  private admitPod(pod: KubeObject, namespace: string): void {
    const quotas = this.registry.types.find((t) => t.kind === 'ResourceQuota' && t.group === '');
    if (!quotas) return;
    const list = this.all(quotas, namespace);
    if (list.length === 0) return;
    const pods = this.registry.get('', 'pods');
    admitPod(pod, list, () => this.all(pods, namespace), this.now(), this.minorVersion);
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
      const causes = validateObject(resource, next, old, this.minorVersion);
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
    checkPreconditions(resource, old, options);
    if (options.dryRun) return { object: old, removed: false };
    const deletion = deletionOf(resource, old, options, this.owners.has(old.metadata.uid), this.now);
    switch (deletion.kind) {
      case 'unchanged':
        return { object: old, removed: false };
      case 'mark':
        return { object: this.commit(resource, 'MODIFIED', deletion.next, old), removed: false };
      case 'remove':
        return { object: this.remove(resource, old), removed: true };
    }
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
    this.owners.update(dependentRef(resource, key), current, undefined);
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
    this.owners.update(dependentRef(resource, key), previous, o);
    const e: StoreEvent = { type, rv: this.rv, resource, object: o };
    if (previous) e.previous = previous;
    this.emit(e);
    return o;
  }

  private emit(e: StoreEvent): void {
    this.history.push(e);
    for (const l of this.listeners) l(e);
  }

  /** Forgets the event history, as an etcd compaction does: older watches and continue tokens get 410. */
  compact(): void {
    this.history.compact(this.rv);
  }

  /**
   * Events after `rv` for a watch resuming there; throws 410 Expired when they are no longer kept.
   * `rv` of the last event the client saw; history replay starts after it.
   */
  eventsSince(rv: number): StoreEvent[] {
    return this.history.since(rv);
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
