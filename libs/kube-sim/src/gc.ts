/**
 * The garbage collector and the namespace controller: dependents of a deleted owner are deleted
 * (Background), deleted first while the owner waits (Foreground), or released (Orphan); dependents whose
 * owner never existed are collected too; a terminating namespace is emptied, then removed.
 */
import { StatusError } from './errors.js';
import { FOREGROUND_FINALIZER, ORPHAN_FINALIZER, type Store, type StoreEvent } from './store.js';
import type { KubeObject } from './types.js';
import type { ResourceType } from './resources.js';

export class GarbageCollector {
  private readonly queue: (() => void)[] = [];
  private scheduled = false;
  private stopped = false;
  private readonly unsubscribe: () => void;

  constructor(private readonly store: Store) {
    this.unsubscribe = store.subscribe((e) => {
      this.onEvent(e);
    });
  }

  stop(): void {
    this.stopped = true;
    this.unsubscribe();
  }

  private later(fn: () => void): void {
    this.queue.push(fn);
    if (this.scheduled || this.stopped) return;
    this.scheduled = true;
    setImmediate(() => {
      this.scheduled = false;
      const batch = this.queue.splice(0);
      for (const f of batch) {
        if (this.stopped) return;
        try {
          f();
        } catch (err) {
          // NotFound and Conflict mean someone else got there first: the next event re-triggers us.
          if (!(err instanceof StatusError)) throw err;
        }
      }
    });
  }

  private onEvent(e: StoreEvent): void {
    const o = e.object;
    if (e.type === 'DELETED') {
      const uid = o.metadata.uid;
      this.later(() => {
        this.collectDependentsOf(uid);
      });
      for (const ref of o.metadata.ownerReferences ?? []) {
        this.later(() => {
          this.checkOwnerWaiting(ref.uid);
        });
      }
      if (o.metadata.namespace) {
        const ns = o.metadata.namespace;
        this.later(() => {
          this.finishNamespace(ns);
        });
      }
      return;
    }
    if (e.type === 'ADDED' && o.metadata.ownerReferences?.length) {
      // An owner that does not exist (any more) makes this a garbage object.
      this.later(() => {
        this.collectIfOwnersGone(e.resource, o);
      });
    }
    if (o.metadata.deletionTimestamp) {
      const fin = o.metadata.finalizers ?? [];
      if (fin.includes(FOREGROUND_FINALIZER)) {
        this.later(() => {
          this.deleteForeground(o);
        });
      }
      if (fin.includes(ORPHAN_FINALIZER)) {
        this.later(() => {
          this.orphan(e.resource, o);
        });
      }
      if (e.resource.kind === 'Namespace' && !e.resource.group) {
        const name = o.metadata.name;
        this.later(() => {
          this.emptyNamespace(name);
        });
      }
    }
  }

  private collectDependentsOf(ownerUid: string): void {
    for (const { resource, object } of this.store.dependentsOf(ownerUid)) {
      this.releaseOrDelete(resource, object, 'Background');
    }
  }

  /** Deletes a dependent unless another owner still holds it; then only the dangling reference goes. */
  private releaseOrDelete(
    resource: ResourceType,
    dep: KubeObject,
    policy: 'Background' | 'Foreground',
  ): void {
    const refs = dep.metadata.ownerReferences ?? [];
    const alive = refs.filter((r) => {
      const owner = this.store.getByUid(r.uid);
      return owner !== undefined && !owner.object.metadata.deletionTimestamp;
    });
    if (alive.length > 0) {
      if (alive.length === refs.length) return;
      const next = structuredClone(dep);
      next.metadata.ownerReferences = alive;
      this.store.replace(resource, next);
      return;
    }
    if (dep.metadata.deletionTimestamp && policy === 'Background') return;
    this.store.delete(resource, dep.metadata.namespace, dep.metadata.name, { propagationPolicy: policy });
  }

  private collectIfOwnersGone(resource: ResourceType, o: KubeObject): void {
    const current = this.store.get(resource, o.metadata.namespace, o.metadata.name);
    if (!current || current.metadata.uid !== o.metadata.uid) return;
    const refs = current.metadata.ownerReferences ?? [];
    if (refs.length && refs.every((r) => !this.store.getByUid(r.uid))) {
      this.store.delete(resource, current.metadata.namespace, current.metadata.name, {
        propagationPolicy: 'Background',
      });
    }
  }

  private deleteForeground(owner: KubeObject): void {
    const deps = this.store.dependentsOf(owner.metadata.uid);
    for (const { resource, object } of deps) {
      if (!object.metadata.deletionTimestamp) this.releaseOrDelete(resource, object, 'Foreground');
    }
    this.checkOwnerWaiting(owner.metadata.uid);
  }

  /** Foreground: the owner goes once no dependent that blocks it is left. */
  private checkOwnerWaiting(ownerUid: string): void {
    const found = this.store.getByUid(ownerUid);
    if (!found) return;
    const { resource, object } = found;
    const fin = object.metadata.finalizers ?? [];
    if (!object.metadata.deletionTimestamp || !fin.includes(FOREGROUND_FINALIZER)) return;
    const blocking = this.store
      .dependentsOf(ownerUid)
      .filter(({ object: d }) =>
        d.metadata.ownerReferences?.some((r) => r.uid === ownerUid && r.blockOwnerDeletion === true),
      );
    if (blocking.length > 0) return;
    const next = structuredClone(object);
    next.metadata.finalizers = fin.filter((f) => f !== FOREGROUND_FINALIZER);
    this.store.replace(resource, next);
  }

  private orphan(resource: ResourceType, owner: KubeObject): void {
    const uid = owner.metadata.uid;
    for (const { resource: r, object } of this.store.dependentsOf(uid)) {
      const next = structuredClone(object);
      next.metadata.ownerReferences = (next.metadata.ownerReferences ?? []).filter((x) => x.uid !== uid);
      if (next.metadata.ownerReferences.length === 0) delete next.metadata.ownerReferences;
      this.store.replace(r, next);
    }
    const current = this.store.getByUid(uid);
    if (!current) return;
    const next = structuredClone(current.object);
    next.metadata.finalizers = (next.metadata.finalizers ?? []).filter((f) => f !== ORPHAN_FINALIZER);
    this.store.replace(resource, next);
  }

  private emptyNamespace(name: string): void {
    for (const t of this.store.registry.types) {
      if (!t.namespaced) continue;
      for (const o of this.store.all(t, name)) {
        if (!o.metadata.deletionTimestamp) {
          this.store.delete(t, name, o.metadata.name, { propagationPolicy: 'Background' });
        }
      }
    }
    this.finishNamespace(name);
  }

  private finishNamespace(name: string): void {
    const nsType = this.store.registry.get('', 'namespaces');
    const ns = this.store.get(nsType, undefined, name);
    if (!ns?.metadata.deletionTimestamp) return;
    for (const t of this.store.registry.types) {
      if (t.namespaced && this.store.all(t, name).length > 0) return;
    }
    this.store.finalizeNamespace(name);
  }
}
