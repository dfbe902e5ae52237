/**
 * An in-memory KubernetesPort for worker unit tests. It behaves like the API server where workers can
 * tell the difference: one resourceVersion counter, 409 AlreadyExists and Conflict, 404 → undefined /
 * 'absent', label and field selectors, paging, status kept out of replaces, generation bumps, immutable
 * fields (Deployment selector, Job template, immutable Secrets), Job selector defaulting, and deletes
 * that cascade to owned objects. It does not run controllers: tests seed pods, events and status with
 * `put` and `setStatus`. Deletion is immediate (no grace period or finalizers).
 *
 * Failures are injected per call with `inject`, before the call takes effect or after it (the answer is
 * lost: the write happened but the caller sees an error, as after a time-out).
 *
 * Watches (deployments, pods, jobs) see the fake's own writes, `put` and `setStatus` included, as
 * ADDED/MODIFIED/DELETED, filtered by namespace and label selector (an object that stops matching is
 * DELETED, one that starts is ADDED). A watch from a resourceVersion replays the writes since then from
 * a bounded history; `compact` forgets it, after which such a watch gets an ERROR 410 event and ends.
 * Events arrive asynchronously, in order. `endWatches` closes the open streams, as a server would.
 */
import { randomUUID } from 'node:crypto';
import { AlreadyExistsError, ConflictError, KubeApiError } from './errors.js';
import type {
  CoreEvent,
  Deployment,
  Job,
  KubeObject,
  Lease,
  Namespace,
  ObjectMeta,
  Pod,
  PodDisruptionBudget,
  Secret,
  StatefulSet,
  Stored,
} from './objects.js';
import {
  DEFAULT_PAGE_SIZE,
  type DeleteResult,
  type KubernetesPort,
  type ListResult,
  type PatchResult,
  type Select,
  type WatchEvent,
  type WatchHandle,
  type WatchOptions,
  type Watched,
  type WatchedResource,
  type ServerVersion,
} from './port.js';
import { matchesFields, matchesLabels, parseFieldSelector, parseLabelSelector } from './selectors.js';

export type FakeResource =
  | 'deployments'
  | 'statefulsets'
  | 'secrets'
  | 'poddisruptionbudgets'
  | 'jobs'
  | 'pods'
  | 'events'
  | 'namespaces'
  | 'leases';

export type FakeVerb = 'get' | 'list' | 'create' | 'update' | 'delete' | 'watch';

export interface FakeCall {
  verb: FakeVerb;
  resource: FakeResource;
  namespace?: string | undefined;
  name?: string | undefined;
}

/** Named failures with the status, reason and transience the real API (or network) gives them. */
export type FakeFailure =
  | 'unavailable' // 503, transient, Retry-After 1
  | 'too-many-requests' // 429, transient, Retry-After 1
  | 'internal' // 500, transient
  | 'timeout' // no answer, transient
  | 'connection-reset' // dropped connection, transient
  | 'conflict' // 409 Conflict, transient
  | 'unauthorized' // 401, permanent
  | 'forbidden' // 403, permanent
  | 'invalid' // 422, permanent
  | KubeApiError;

export interface FailureRule {
  /** Which calls fail; unset fields match any. */
  verb?: FakeVerb;
  resource?: FakeResource;
  namespace?: string;
  name?: string;
  failure: FakeFailure;
  /** How many matching calls fail (default 1; Infinity for all). */
  times?: number;
  /** Let the call take effect, then fail: a write whose answer was lost. */
  afterEffect?: boolean;
}

export interface FakeKubernetesOptions {
  /** Namespaces that exist; writes elsewhere get 404 as on a cluster. Default: ['default']. */
  namespaces?: string[];
}

interface Kind {
  apiVersion: string;
  kind: string;
  /** Group-qualified plural as in API messages, e.g. `deployments.apps`. */
  qualified: string;
  /** Has a status subresource: create clears status, replace keeps the stored one. */
  status: boolean;
  /** metadata.generation counts spec changes. */
  generation: boolean;
}

const KINDS: Record<FakeResource, Kind> = {
  deployments: {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    qualified: 'deployments.apps',
    status: true,
    generation: true,
  },
  statefulsets: {
    apiVersion: 'apps/v1',
    kind: 'StatefulSet',
    qualified: 'statefulsets.apps',
    status: true,
    generation: true,
  },
  secrets: { apiVersion: 'v1', kind: 'Secret', qualified: 'secrets', status: false, generation: false },
  poddisruptionbudgets: {
    apiVersion: 'policy/v1',
    kind: 'PodDisruptionBudget',
    qualified: 'poddisruptionbudgets.policy',
    status: true,
    generation: true,
  },
  jobs: { apiVersion: 'batch/v1', kind: 'Job', qualified: 'jobs.batch', status: true, generation: true },
  pods: { apiVersion: 'v1', kind: 'Pod', qualified: 'pods', status: true, generation: false },
  events: { apiVersion: 'v1', kind: 'Event', qualified: 'events', status: false, generation: false },
  namespaces: {
    apiVersion: 'v1',
    kind: 'Namespace',
    qualified: 'namespaces',
    status: true,
    generation: false,
  },
  leases: {
    apiVersion: 'coordination.k8s.io/v1',
    kind: 'Lease',
    qualified: 'leases.coordination.k8s.io',
    status: false,
    generation: false,
  },
};

const WATCHED = new Set<FakeResource>(['deployments', 'statefulsets', 'pods', 'jobs']);
/** Writes kept for watch resumes; older ones are forgotten as by a compaction. */
const HISTORY_LIMIT = 1000;

/** One write to a watched kind: the object before (undefined if created) and after (undefined if deleted). */
interface Change {
  resource: FakeResource;
  rv: number;
  old: AnyStored | undefined;
  next: AnyStored | undefined;
}

interface FakeWatch {
  resource: FakeResource;
  namespace: string | undefined;
  labels: ReturnType<typeof parseLabelSelector>;
  /** The server side ends the stream: queued events are still handed over, then `done` settles. */
  end(failure?: unknown): void;
  /** Queues an event; they are handed over on a microtask, in order. */
  deliver(event: WatchEvent<unknown>): void;
}

/** The field selectors the API server supports for Events, and where each field lives. */
const EVENT_FIELDS: Record<string, string> = {
  'metadata.name': 'metadata.name',
  'metadata.namespace': 'metadata.namespace',
  'involvedObject.kind': 'involvedObject.kind',
  'involvedObject.namespace': 'involvedObject.namespace',
  'involvedObject.name': 'involvedObject.name',
  'involvedObject.uid': 'involvedObject.uid',
  'involvedObject.apiVersion': 'involvedObject.apiVersion',
  'involvedObject.resourceVersion': 'involvedObject.resourceVersion',
  'involvedObject.fieldPath': 'involvedObject.fieldPath',
  reason: 'reason',
  type: 'type',
  source: 'source.component',
  reportingComponent: 'reportingComponent',
};

const DNS_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;

type AnyStored = Stored<KubeObject> & { spec?: unknown; status?: unknown; data?: unknown };

function selected<T, U>(result: ListResult<T>, select: Select<T, U> | undefined): ListResult<U> {
  if (!select) return result as unknown as ListResult<U>;
  const items: U[] = [];
  for (const item of result.items) {
    const kept = select(item);
    if (kept !== undefined) items.push(kept);
  }
  return { ...result, items };
}

function clone<T>(o: T): T {
  return structuredClone(o);
}

function same(a: unknown, b: unknown): boolean {
  return JSON.stringify(a) === JSON.stringify(b);
}

/** RFC 3339 in whole seconds, as the API server writes metav1.Time. */
function now(): string {
  return new Date().toISOString().replace(/\.\d{3}Z$/, 'Z');
}

function status(
  code: number,
  reason: string,
  message: string,
  transient = code >= 500 || code === 429,
): KubeApiError {
  return new KubeApiError({
    status: code,
    reason,
    message,
    transient,
    ...(code === 429 || code === 503 ? { retryAfterSeconds: 1 } : {}),
  });
}

/** metav1.MicroTime: the API server decodes only RFC 3339 with exactly six fractional digits (400 otherwise). */
const MICRO_TIME = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}(Z|[+-]\d\d:\d\d)$/;

function leaseTimesMustDecode(lease: Lease): void {
  for (const t of [lease.spec?.acquireTime, lease.spec?.renewTime]) {
    if (t !== undefined && !MICRO_TIME.test(t)) {
      throw status(
        400,
        'BadRequest',
        `Lease in version "v1" cannot be handled as a Lease: parsing time "${t}"`,
      );
    }
  }
}

function invalid(kind: Kind, name: string, causes: string[]): KubeApiError {
  return status(422, 'Invalid', `${kind.kind} "${name}" is invalid: ${causes.join(', ')}`);
}

function failureError(f: FakeFailure, call: FakeCall): KubeApiError {
  if (f instanceof KubeApiError) return f;
  const what = `${KINDS[call.resource].qualified} "${call.name ?? ''}"`;
  switch (f) {
    case 'unavailable':
      return status(503, 'ServiceUnavailable', 'the server is currently unable to handle the request');
    case 'too-many-requests':
      return status(429, 'TooManyRequests', 'Too many requests, please try again later.');
    case 'internal':
      return status(500, 'InternalError', 'Internal error occurred: injected fault');
    case 'timeout':
      return new KubeApiError({
        status: undefined,
        reason: 'Timeout',
        message: 'no answer in time',
        transient: true,
      });
    case 'connection-reset':
      return new KubeApiError({
        status: undefined,
        reason: 'ConnectionReset',
        message: 'connection reset or dropped before an answer (ECONNRESET)',
        transient: true,
      });
    case 'conflict':
      return new ConflictError({
        message: `Operation cannot be fulfilled on ${what}: the object has been modified; please apply your changes to the latest version and try again`,
      });
    case 'unauthorized':
      return status(401, 'Unauthorized', 'Unauthorized');
    case 'forbidden':
      return status(403, 'Forbidden', `${what} is forbidden: injected fault`);
    case 'invalid':
      return status(422, 'Invalid', `${what} is invalid: injected fault`);
  }
}

export class FakeKubernetes implements KubernetesPort {
  /** Every call, in order (one entry per page of a list), failed ones included. */
  readonly calls: FakeCall[] = [];
  private readonly store = new Map<FakeResource, Map<string, AnyStored>>();
  private readonly rules: FailureRule[] = [];
  private rv = 1000;
  private readonly history: Change[] = [];
  /** A watch from an older resourceVersion than this is too old (410). */
  private compactedRv = this.rv;
  private readonly watches = new Set<FakeWatch>();

  constructor(options: FakeKubernetesOptions = {}) {
    for (const r of Object.keys(KINDS) as FakeResource[]) this.store.set(r, new Map());
    for (const ns of options.namespaces ?? ['default']) this.addNamespace(ns);
  }

  // --- test controls ---------------------------------------------------------------------------------

  /** Makes matching calls fail; rules are tried in the order given. */
  inject(rule: FailureRule): void {
    this.rules.push({ ...rule, times: rule.times ?? 1 });
  }

  clearFailures(): void {
    this.rules.length = 0;
  }

  /** The current resourceVersion of the whole store. */
  get resourceVersion(): string {
    return String(this.rv);
  }

  addNamespace(name: string): Stored<Namespace> {
    return this.put('namespaces', undefined, { metadata: { name }, status: { phase: 'Active' } });
  }

  /**
   * Stores an object as a controller or kubelet would (status included, no checks), replacing one of the
   * same name; fills identity and a new resourceVersion.
   */
  put<T extends KubeObject>(resource: FakeResource, namespace: string | undefined, o: T): Stored<T> {
    const kind = KINDS[resource];
    const name = o.metadata?.name;
    if (!name) throw new Error('put needs metadata.name');
    const old = this.bucket(resource).get(key(namespace, name));
    const stored = {
      ...clone(o),
      apiVersion: kind.apiVersion,
      kind: kind.kind,
      metadata: {
        ...clone(o.metadata),
        name,
        ...(namespace !== undefined ? { namespace } : {}),
        uid: o.metadata?.uid ?? old?.metadata.uid ?? randomUUID(),
        creationTimestamp: o.metadata?.creationTimestamp ?? old?.metadata.creationTimestamp ?? now(),
        resourceVersion: this.nextRv(),
      },
    } as AnyStored;
    this.bucket(resource).set(key(namespace, name), stored);
    this.changed(resource, old, stored);
    return clone(stored) as Stored<T>;
  }

  /** Sets an object's status as its controller would; a new resourceVersion, no generation change. */
  setStatus(resource: FakeResource, namespace: string | undefined, name: string, newStatus: unknown): void {
    const o = this.bucket(resource).get(key(namespace, name));
    if (!o) throw new Error(`${resource} ${namespace ?? ''}/${name} does not exist`);
    const old = WATCHED.has(resource) ? clone(o) : undefined;
    o.status = clone(newStatus);
    o.metadata.resourceVersion = this.nextRv();
    this.changed(resource, old, o);
  }

  /** Forgets the write history: a watch from a resourceVersion before now gets ERROR 410 Expired. */
  compact(): void {
    this.history.length = 0;
    this.compactedRv = this.rv;
  }

  /** Ends every open watch, as an API server closing its streams: `done` resolves, or rejects with `failure`. */
  endWatches(failure?: FakeFailure): void {
    for (const w of [...this.watches]) {
      w.end(
        failure === undefined ? undefined : failureError(failure, { verb: 'watch', resource: w.resource }),
      );
    }
  }

  /** How many watches are open. */
  get openWatches(): number {
    return this.watches.size;
  }

  /** A snapshot of what is stored, sorted by namespace and name. */
  objects<T extends KubeObject = KubeObject>(resource: FakeResource, namespace?: string): Stored<T>[] {
    return this.sorted(resource, namespace).map((o) => clone(o) as Stored<T>);
  }

  // --- the port ----------------------------------------------------------------------------------------

  getDeployment(namespace: string, name: string): Promise<Stored<Deployment> | undefined> {
    return this.get('deployments', namespace, name);
  }
  createDeployment(namespace: string, deployment: Deployment): Promise<Stored<Deployment>> {
    return this.create('deployments', namespace, deployment);
  }
  replaceDeployment(namespace: string, deployment: Deployment): Promise<Stored<Deployment>> {
    return this.replace('deployments', namespace, deployment);
  }
  deleteDeployment(namespace: string, name: string): Promise<DeleteResult> {
    return this.remove('deployments', namespace, name);
  }
  async listDeployments<U = Stored<Deployment>>(
    namespace: string | undefined,
    labelSelector?: string,
    pageSize?: number,
    select?: Select<Stored<Deployment>, U>,
  ): Promise<ListResult<U>> {
    return selected(
      await this.list<Deployment>('deployments', namespace, { labelSelector, pageSize }),
      select,
    );
  }

  getStatefulSet(namespace: string, name: string): Promise<Stored<StatefulSet> | undefined> {
    return this.get('statefulsets', namespace, name);
  }
  createStatefulSet(namespace: string, statefulSet: StatefulSet): Promise<Stored<StatefulSet>> {
    return this.create('statefulsets', namespace, statefulSet);
  }
  replaceStatefulSet(namespace: string, statefulSet: StatefulSet): Promise<Stored<StatefulSet>> {
    return this.replace('statefulsets', namespace, statefulSet);
  }
  deleteStatefulSet(namespace: string, name: string): Promise<DeleteResult> {
    return this.remove('statefulsets', namespace, name);
  }
  async listStatefulSets<U = Stored<StatefulSet>>(
    namespace: string | undefined,
    labelSelector?: string,
    pageSize?: number,
    select?: Select<Stored<StatefulSet>, U>,
  ): Promise<ListResult<U>> {
    return selected(
      await this.list<StatefulSet>('statefulsets', namespace, { labelSelector, pageSize }),
      select,
    );
  }

  getSecret(namespace: string, name: string): Promise<Stored<Secret> | undefined> {
    return this.get('secrets', namespace, name);
  }
  createSecret(namespace: string, secret: Secret): Promise<Stored<Secret>> {
    return this.create('secrets', namespace, secret);
  }
  replaceSecret(namespace: string, secret: Secret): Promise<Stored<Secret>> {
    return this.replace('secrets', namespace, secret);
  }
  deleteSecret(namespace: string, name: string): Promise<DeleteResult> {
    return this.remove('secrets', namespace, name);
  }

  getPodDisruptionBudget(namespace: string, name: string): Promise<Stored<PodDisruptionBudget> | undefined> {
    return this.get('poddisruptionbudgets', namespace, name);
  }
  createPodDisruptionBudget(
    namespace: string,
    pdb: PodDisruptionBudget,
  ): Promise<Stored<PodDisruptionBudget>> {
    return this.create('poddisruptionbudgets', namespace, pdb);
  }
  replacePodDisruptionBudget(
    namespace: string,
    pdb: PodDisruptionBudget,
  ): Promise<Stored<PodDisruptionBudget>> {
    return this.replace('poddisruptionbudgets', namespace, pdb);
  }
  deletePodDisruptionBudget(namespace: string, name: string): Promise<DeleteResult> {
    return this.remove('poddisruptionbudgets', namespace, name);
  }

  getJob(namespace: string, name: string): Promise<Stored<Job> | undefined> {
    return this.get('jobs', namespace, name);
  }
  createJob(namespace: string, job: Job): Promise<Stored<Job>> {
    return this.create('jobs', namespace, job);
  }
  replaceJob(namespace: string, job: Job): Promise<Stored<Job>> {
    return this.replace('jobs', namespace, job);
  }
  deleteJob(namespace: string, name: string): Promise<DeleteResult> {
    return this.remove('jobs', namespace, name);
  }

  async listPods<U = Stored<Pod>>(
    namespace: string | undefined,
    labelSelector?: string,
    pageSize?: number,
    select?: Select<Stored<Pod>, U>,
  ): Promise<ListResult<U>> {
    return selected(await this.list<Pod>('pods', namespace, { labelSelector, pageSize }), select);
  }
  deletePod(namespace: string, name: string): Promise<DeleteResult> {
    return this.remove('pods', namespace, name);
  }
  getPod(namespace: string, name: string): Promise<Stored<Pod> | undefined> {
    return this.get('pods', namespace, name);
  }
  annotatePod(
    namespace: string,
    name: string,
    annotations: Record<string, string | null>,
    resourceVersion?: string,
  ): Promise<PatchResult> {
    return this.annotate('pods', namespace, name, annotations, resourceVersion);
  }
  async listJobs<U = Stored<Job>>(
    namespace: string | undefined,
    labelSelector?: string,
    pageSize?: number,
    select?: Select<Stored<Job>, U>,
  ): Promise<ListResult<U>> {
    return selected(await this.list<Job>('jobs', namespace, { labelSelector, pageSize }), select);
  }
  annotateJob(
    namespace: string,
    name: string,
    annotations: Record<string, string | null>,
  ): Promise<PatchResult> {
    return this.annotate('jobs', namespace, name, annotations);
  }

  /** A merge patch of metadata.annotations, as the adapter sends it: unconditional, null removes. */
  private async annotate(
    resource: 'pods' | 'jobs',
    namespace: string,
    name: string,
    annotations: Record<string, string | null>,
    resourceVersion?: string,
  ): Promise<PatchResult> {
    const current = await this.get<KubeObject>(resource, namespace, name);
    if (!current) return 'absent';
    if (resourceVersion && current.metadata?.resourceVersion !== resourceVersion) {
      throw new ConflictError({
        message: `Operation cannot be fulfilled on ${resource} "${name}": the object has been modified`,
        operation: `patch ${resource} ${namespace}/${name}`,
      });
    }
    const next = structuredClone(current) as KubeObject & { metadata: ObjectMeta };
    const merged = new Map(Object.entries(next.metadata.annotations ?? {}));
    for (const [k, v] of Object.entries(annotations)) {
      if (v === null) merged.delete(k);
      else merged.set(k, v);
    }
    next.metadata.annotations = Object.fromEntries(merged);
    delete next.metadata.resourceVersion;
    await this.replace(resource, namespace, next);
    return 'patched';
  }

  listEvents(
    namespace: string | undefined,
    fieldSelector?: string,
    pageSize?: number,
  ): Promise<ListResult<Stored<CoreEvent>>> {
    return this.list('events', namespace, { fieldSelector, pageSize });
  }

  getNamespace(name: string): Promise<Stored<Namespace> | undefined> {
    return this.get('namespaces', undefined, name);
  }

  /** As a current cluster answers; tests set another. */
  serverVersion: ServerVersion = { major: '1', minor: '30', gitVersion: 'v1.30.0-fake' };
  getServerVersion(): Promise<ServerVersion> {
    return Promise.resolve({ ...this.serverVersion });
  }

  getLease(namespace: string, name: string): Promise<Stored<Lease> | undefined> {
    return this.get('leases', namespace, name);
  }
  createLease(namespace: string, lease: Lease): Promise<Stored<Lease>> {
    return this.create('leases', namespace, lease);
  }
  replaceLease(namespace: string, lease: Lease): Promise<Stored<Lease>> {
    return this.replace('leases', namespace, lease);
  }

  watch<R extends WatchedResource>(
    resource: R,
    namespace: string | undefined,
    options: WatchOptions,
    onEvent: (event: WatchEvent<Watched[R]>) => void,
  ): WatchHandle {
    let resolveDone!: () => void;
    let rejectDone!: (e: unknown) => void;
    const done = new Promise<void>((resolve, reject) => {
      resolveDone = resolve;
      rejectDone = reject;
    });
    // open: takes events; closing: the server ended it, queued events still go out; closed: settled.
    let state: 'open' | 'closing' | 'closed' = 'open';
    let ending: unknown;
    let timer: NodeJS.Timeout | undefined;
    let flushing = false;
    const queue: WatchEvent<unknown>[] = [];
    const close = (failure?: unknown): void => {
      if (state === 'closed') return;
      state = 'closed';
      clearTimeout(timer);
      this.watches.delete(w);
      queue.length = 0;
      if (failure === undefined) resolveDone();
      else rejectDone(failure);
    };
    const flush = (): void => {
      if (flushing) return;
      flushing = true;
      queueMicrotask(() => {
        flushing = false;
        for (let e = queue.shift(); e !== undefined && state !== 'closed'; e = queue.shift()) {
          try {
            onEvent(e as WatchEvent<Watched[R]>);
          } catch (err) {
            close(err);
          }
        }
        if (state === 'closing') close(ending);
      });
    };
    const w: FakeWatch = {
      resource,
      namespace,
      labels: [],
      end: (failure) => {
        if (state !== 'open') return;
        state = 'closing';
        ending = failure;
        clearTimeout(timer);
        this.watches.delete(w);
        flush();
      },
      deliver: (event) => {
        if (state !== 'open') return;
        queue.push(clone(event));
        flush();
      },
    };
    const start = (): void => {
      if (state !== 'open') return; // stopped before it started
      const { before, after } = this.enter({ verb: 'watch', resource, namespace });
      if (before) throw before;
      w.labels = parseLabelSelector(options.labelSelector ?? '');
      const from = options.resourceVersion;
      if (from === undefined || from === '' || from === '0') {
        // As the API server: the current objects first, as ADDED.
        for (const o of this.sorted(resource, namespace)) {
          if (matchesLabels(w.labels, o.metadata.labels)) w.deliver({ type: 'ADDED', object: o });
        }
      } else if (Number(from) < this.compactedRv) {
        w.deliver({
          type: 'ERROR',
          object: {
            kind: 'Status',
            code: 410,
            reason: 'Expired',
            message: `too old resource version: ${from} (${this.compactedRv})`,
          },
        });
        w.end();
        return;
      } else {
        for (const c of this.history) if (c.rv > Number(from)) this.notify(w, c);
      }
      if (after) {
        w.end(after);
        return;
      }
      this.watches.add(w);
      if (options.timeoutSeconds !== undefined) {
        timer = setTimeout(() => {
          if (options.allowWatchBookmarks) {
            w.deliver({ type: 'BOOKMARK', object: { metadata: { resourceVersion: this.resourceVersion } } });
          }
          w.end();
        }, options.timeoutSeconds * 1000);
        timer.unref();
      }
    };
    // A turn of the event loop, as a real request would take; every failure is a rejection of done.
    queueMicrotask(() => {
      try {
        start();
      } catch (e) {
        w.end(e);
      }
    });
    return {
      done,
      stop: () => {
        close();
      },
    };
  }

  // --- the mechanics -----------------------------------------------------------------------------------

  private bucket(resource: FakeResource): Map<string, AnyStored> {
    const b = this.store.get(resource);
    if (!b) throw new Error(`unknown resource ${resource}`);
    return b;
  }

  private nextRv(): string {
    this.rv += 1;
    return String(this.rv);
  }

  /** Records a write to a watched kind and tells the open watches. */
  private changed(resource: FakeResource, old: AnyStored | undefined, next: AnyStored | undefined): void {
    if (!WATCHED.has(resource)) return;
    const change: Change = {
      resource,
      rv: this.rv,
      old: old && clone(old),
      next: next && clone(next),
    };
    this.history.push(change);
    if (this.history.length > HISTORY_LIMIT) {
      const dropped = this.history.shift();
      if (dropped) this.compactedRv = dropped.rv;
    }
    for (const w of this.watches) this.notify(w, change);
  }

  /** The event a change is to one watch, if any: a label change in or out of its selector is ADDED/DELETED. */
  private notify(w: FakeWatch, c: Change): void {
    const o = c.next ?? c.old;
    if (w.resource !== c.resource || !o) return;
    if (w.namespace !== undefined && o.metadata.namespace !== w.namespace) return;
    const was = c.old !== undefined && matchesLabels(w.labels, c.old.metadata.labels);
    const is = c.next !== undefined && matchesLabels(w.labels, c.next.metadata.labels);
    if (is) w.deliver({ type: was ? 'MODIFIED' : 'ADDED', object: c.next });
    else if (was) {
      // A deleted object carries the deletion's resourceVersion; one that left the selector, its new one.
      const gone = c.next ?? { ...c.old, metadata: { ...c.old?.metadata, resourceVersion: String(c.rv) } };
      w.deliver({ type: 'DELETED', object: gone });
    }
  }

  private sorted(resource: FakeResource, namespace: string | undefined): AnyStored[] {
    return [...this.bucket(resource).values()]
      .filter((o) => namespace === undefined || o.metadata.namespace === namespace)
      .sort((a, b) =>
        key(a.metadata.namespace, a.metadata.name).localeCompare(key(b.metadata.namespace, b.metadata.name)),
      );
  }

  /** Records the call and returns the failure to throw, if a rule matches. */
  private enter(call: FakeCall): { before?: KubeApiError; after?: KubeApiError } {
    this.calls.push(call);
    const i = this.rules.findIndex(
      (r) =>
        (r.verb === undefined || r.verb === call.verb) &&
        (r.resource === undefined || r.resource === call.resource) &&
        (r.namespace === undefined || r.namespace === call.namespace) &&
        (r.name === undefined || r.name === call.name),
    );
    const rule = this.rules[i];
    if (!rule) return {};
    rule.times = (rule.times ?? 1) - 1;
    if (rule.times <= 0) this.rules.splice(i, 1);
    const err = failureError(rule.failure, call);
    return rule.afterEffect ? { after: err } : { before: err };
  }

  /** Runs a call with the failure injection around it; async so that every outcome is a rejection. */
  private async run<R>(call: FakeCall, effect: () => R): Promise<R> {
    // A turn of the event loop, as a real call would take: workers must not rely on synchronous answers.
    await Promise.resolve();
    const { before, after } = this.enter(call);
    if (before) throw before;
    const result = effect();
    if (after) throw after;
    return result;
  }

  private namespaceMustExist(namespace: string): void {
    if (!this.bucket('namespaces').has(key(undefined, namespace))) {
      throw status(404, 'NotFound', `namespaces "${namespace}" not found`);
    }
  }

  private get<T extends KubeObject>(
    resource: FakeResource,
    namespace: string | undefined,
    name: string,
  ): Promise<Stored<T> | undefined> {
    return this.run({ verb: 'get', resource, namespace, name }, () => {
      const o = this.bucket(resource).get(key(namespace, name));
      return o ? (clone(o) as Stored<T>) : undefined;
    });
  }

  private create<T extends KubeObject>(resource: FakeResource, namespace: string, o: T): Promise<Stored<T>> {
    const kind = KINDS[resource];
    return this.run({ verb: 'create', resource, namespace, name: o.metadata?.name }, () => {
      const meta: Partial<ObjectMeta> = o.metadata ?? {};
      if (meta.namespace !== undefined && meta.namespace !== namespace) {
        throw status(
          400,
          'BadRequest',
          'the namespace of the provided object does not match the namespace sent on the request',
        );
      }
      const name =
        meta.name || (meta.generateName ? `${meta.generateName}${randomUUID().slice(0, 5)}` : undefined);
      if (!name) throw invalid(kind, '', ['metadata.name: Required value: name or generateName is required']);
      if (!DNS_SUBDOMAIN.test(name) || name.length > 253) {
        throw invalid(kind, name, [
          `metadata.name: Invalid value: "${name}": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character`,
        ]);
      }
      if (meta.resourceVersion) {
        throw status(500, 'InternalError', 'resourceVersion should not be set on objects to be created');
      }
      if (resource === 'leases') leaseTimesMustDecode(o as Lease);
      this.namespaceMustExist(namespace);
      if (this.bucket(resource).has(key(namespace, name))) {
        throw new AlreadyExistsError({ message: `${kind.qualified} "${name}" already exists` });
      }
      const uid = randomUUID();
      const stored = {
        ...clone(o),
        apiVersion: kind.apiVersion,
        kind: kind.kind,
        metadata: {
          ...clone(meta),
          name,
          namespace,
          uid,
          resourceVersion: this.nextRv(),
          creationTimestamp: now(),
          ...(kind.generation ? { generation: 1 } : {}),
        },
      } as AnyStored;
      if (kind.status) delete stored.status;
      if (resource === 'pods') stored.status = { phase: 'Pending' };
      this.defaults(resource, stored);
      this.bucket(resource).set(key(namespace, name), stored);
      this.changed(resource, undefined, stored);
      return clone(stored) as Stored<T>;
    });
  }

  /** The API server's defaulting that workers can observe. */
  private defaults(resource: FakeResource, o: AnyStored): void {
    if (resource === 'secrets') {
      const s = o as Secret;
      s.type ??= 'Opaque';
      if (s.stringData) {
        s.data = { ...s.data };
        for (const [k, v] of Object.entries(s.stringData)) s.data[k] = Buffer.from(v).toString('base64');
        delete s.stringData;
      }
    }
    if (resource === 'deployments') {
      const d = o as Deployment;
      if (d.spec) d.spec.replicas ??= 1;
    }
    if (resource === 'jobs') {
      // As the Job registry does: a generated selector on the controller uid, and labels to match.
      const j = o as Job;
      if (j.spec && !j.spec.manualSelector && !j.spec.selector) {
        const uid = o.metadata.uid;
        const template = (j.spec.template.metadata ??= {});
        template.labels = {
          ...template.labels,
          'batch.kubernetes.io/controller-uid': uid,
          'batch.kubernetes.io/job-name': o.metadata.name,
          'controller-uid': uid,
          'job-name': o.metadata.name,
        };
        j.spec.selector = { matchLabels: { 'batch.kubernetes.io/controller-uid': uid } };
      }
    }
  }

  private replace<T extends KubeObject>(resource: FakeResource, namespace: string, o: T): Promise<Stored<T>> {
    const kind = KINDS[resource];
    const name = o.metadata?.name;
    return this.run({ verb: 'update', resource, namespace, name }, () => {
      if (!name) throw invalid(kind, '', ['metadata.name: Required value: name is required']);
      const old = this.bucket(resource).get(key(namespace, name));
      if (!old) throw status(404, 'NotFound', `${kind.qualified} "${name}" not found`);
      const conflict = new ConflictError({
        message: `Operation cannot be fulfilled on ${kind.qualified} "${name}": the object has been modified; please apply your changes to the latest version and try again`,
      });
      if (resource === 'leases') leaseTimesMustDecode(o as Lease);
      const meta: Partial<ObjectMeta> = o.metadata ?? {};
      if (meta.resourceVersion && meta.resourceVersion !== old.metadata.resourceVersion) throw conflict;
      if (meta.uid && meta.uid !== old.metadata.uid) {
        throw new ConflictError({
          message: `Precondition failed: UID in precondition: ${meta.uid}, UID in object meta: ${old.metadata.uid}`,
        });
      }
      const next = {
        ...clone(o),
        apiVersion: kind.apiVersion,
        kind: kind.kind,
        metadata: {
          ...clone(meta),
          name,
          namespace,
          uid: old.metadata.uid,
          creationTimestamp: old.metadata.creationTimestamp,
          resourceVersion: old.metadata.resourceVersion,
        },
      } as AnyStored;
      if (kind.status) {
        if (old.status === undefined) delete next.status;
        else next.status = clone(old.status);
      }
      // Job selectors are generated on create only; an update must carry the stored one.
      if (resource !== 'jobs') this.defaults(resource, next);
      this.checkImmutable(resource, kind, old, next);
      if (kind.generation) {
        const generation = old.metadata.generation ?? 1;
        next.metadata.generation = same(old.spec, next.spec) ? generation : generation + 1;
      }
      // A write that changes nothing keeps its resourceVersion, as on the API server.
      const change = !same(old, next);
      if (change) next.metadata.resourceVersion = this.nextRv();
      this.bucket(resource).set(key(namespace, name), next);
      if (change) this.changed(resource, old, next);
      return clone(next) as Stored<T>;
    });
  }

  private checkImmutable(resource: FakeResource, kind: Kind, old: AnyStored, next: AnyStored): void {
    const causes: string[] = [];
    if (
      resource === 'deployments' &&
      !same((old as Deployment).spec?.selector, (next as Deployment).spec?.selector)
    ) {
      causes.push('spec.selector: Invalid value: field is immutable');
    }
    if (resource === 'jobs' && !same((old as Job).spec?.template, (next as Job).spec?.template)) {
      causes.push('spec.template: Invalid value: field is immutable');
    }
    if (resource === 'secrets' && (old as Secret).immutable === true && !same(old.data, next.data)) {
      causes.push('data: Forbidden: field is immutable when `immutable` is set');
    }
    if (causes.length > 0) throw invalid(kind, next.metadata.name, causes);
  }

  private remove(resource: FakeResource, namespace: string, name: string): Promise<DeleteResult> {
    return this.run({ verb: 'delete', resource, namespace, name }, (): DeleteResult => {
      const o = this.bucket(resource).get(key(namespace, name));
      if (!o) return 'absent';
      this.bucket(resource).delete(key(namespace, name));
      this.rv += 1;
      this.changed(resource, o, undefined);
      this.cascade(o.metadata.uid);
      return 'deleted';
    });
  }

  /** Background propagation: whatever the deleted object owned goes too, transitively. */
  private cascade(ownerUid: string): void {
    for (const resource of Object.keys(KINDS) as FakeResource[]) {
      for (const [k, o] of this.bucket(resource)) {
        if (o.metadata.ownerReferences?.some((r) => r.uid === ownerUid)) {
          this.bucket(resource).delete(k);
          this.rv += 1;
          this.changed(resource, o, undefined);
          this.cascade(o.metadata.uid);
        }
      }
    }
  }

  private async list<T extends KubeObject>(
    resource: FakeResource,
    namespace: string | undefined,
    q: {
      labelSelector?: string | undefined;
      fieldSelector?: string | undefined;
      pageSize?: number | undefined;
    },
  ): Promise<ListResult<Stored<T>>> {
    const pageSize = q.pageSize ?? DEFAULT_PAGE_SIZE;
    if (!Number.isInteger(pageSize) || pageSize < 1) {
      throw new KubeApiError({
        status: undefined,
        reason: 'ClientError',
        message: `pageSize must be an integer ≥ 1, not ${pageSize}`,
        transient: false,
      });
    }
    // The whole list is one snapshot, as the API server's continue tokens give; one call per page.
    const snapshot = await this.run({ verb: 'list', resource, namespace }, () => {
      const labels = parseLabelSelector(q.labelSelector ?? '');
      const fields = parseFieldSelector(
        q.fieldSelector ?? '',
        resource === 'events'
          ? EVENT_FIELDS
          : {
              'metadata.name': 'metadata.name',
              'metadata.namespace': 'metadata.namespace',
            },
      );
      const items = this.sorted(resource, namespace)
        .filter((o) => matchesLabels(labels, o.metadata.labels) && matchesFields(fields, o))
        .map((o) => clone(o) as Stored<T>);
      return { items, resourceVersion: this.resourceVersion };
    });
    for (let served = pageSize; served < snapshot.items.length; served += pageSize) {
      await this.run({ verb: 'list', resource, namespace }, () => undefined);
    }
    return snapshot;
  }
}

function key(namespace: string | undefined, name: string): string {
  return `${namespace ?? ''}/${name}`;
}
