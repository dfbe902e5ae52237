/**
 * The one way the workers reach Kubernetes. Implemented over client-node by `ClientNodeKubernetes`, which
 * keeps the semantics below (tests run it against the simulated cluster of @opi/kube-sim).
 *
 * Each resource is a client of its own (`kube.deployments.get(…)`), with only the verbs the service uses.
 * Semantics shared by every verb:
 * - `get` resolves `undefined` when the object (or its namespace) does not exist.
 * - `delete` resolves `'absent'` on 404: a delete that finds nothing has still reached its goal; so does
 *   `annotate`.
 * - `create` rejects with `AlreadyExistsError` (409 AlreadyExists, permanent) when the name is taken.
 * - `replace` is the update path: it sends the object's `metadata.resourceVersion` and rejects with
 *   `ConflictError` (409 Conflict, transient: re-read and retry) when the object changed since that
 *   version. Without a resourceVersion the API server replaces unconditionally. The name comes from
 *   `metadata.name`. Changes to `status` are ignored, as the status subresource owns it.
 * - `list` follows `continue` tokens page by page (`pageSize` objects each, default 500) and resolves the
 *   whole collection with the list's resourceVersion (for a watch to start from). A `select` function
 *   maps each object as its page arrives (e.g. drops fields the caller does not read), so a listing of
 *   100,000 objects is never held whole.
 * - Everything else rejects with a `KubeApiError` whose `transient` says whether a retry can help.
 */
import type { KubeObject, Stored } from './objects.js';
import type {
  CoreEvent,
  Deployment,
  Job,
  Lease,
  Namespace,
  Pod,
  PodDisruptionBudget,
  Secret,
  StatefulSet,
} from '@opi/kube-objects';

export type DeleteResult = 'deleted' | 'absent';
export type PatchResult = 'patched' | 'absent';

export interface ListResult<T> {
  items: T[];
  /** The collection's resourceVersion when the first page was read. */
  resourceVersion: string;
}

/**
 * Applied to each listed object as its page arrives; answers what the list keeps of it, or undefined to
 * keep nothing. A page's objects are garbage as soon as it is read, so a caller listing 100,000 objects
 * holds only its summaries. It must be pure: a list restarted after an expired continue token applies it
 * again to the objects it already saw.
 */
export type Select<T, U> = (item: T) => U | undefined;

/** What `/version` answers; `minor` may carry a suffix (`"28+"` on some providers). */
export interface ServerVersion {
  major: string;
  minor: string;
  gitVersion: string;
}

/** The kinds the service watches, by plural resource name. */
export interface Watched {
  deployments: Stored<Deployment>;
  statefulsets: Stored<StatefulSet>;
  pods: Stored<Pod>;
  jobs: Stored<Job>;
  /** v1 Events, watched through a field selector (the StatefulSets' FailedCreate: their pods refused). */
  events: Stored<CoreEvent>;
}
export type WatchedResource = keyof Watched;

/** The Status an ERROR event carries (e.g. code 410, reason Expired, after a compaction). */
export interface WatchStatus {
  kind?: 'Status';
  code?: number;
  reason?: string;
  message?: string;
}

/** One line of a watch stream, as the API server sent it. A BOOKMARK's object carries only its kind and resourceVersion. */
export type WatchEvent<T> =
  | { type: 'ADDED' | 'MODIFIED' | 'DELETED'; object: T }
  | {
      type: 'BOOKMARK';
      object: { metadata: { resourceVersion: string; annotations?: Record<string, string> } };
    }
  | { type: 'ERROR'; object: WatchStatus };

export interface WatchOptions {
  labelSelector?: string;
  /** In field selector syntax (`reason=FailedCreate,involvedObject.kind=StatefulSet`). */
  fieldSelector?: string;
  /** Where to start; '' or undefined: now, "0": any version the server has (both begin with ADDED of every object). */
  resourceVersion?: string;
  allowWatchBookmarks?: boolean;
  /** The server closes the stream after this long. */
  timeoutSeconds?: number;
  /**
   * The client aborts the stream after this long whatever the server does (default: timeoutSeconds + 30 s,
   * or 30 min without timeoutSeconds): a connection that went silent (a dead peer, a load balancer that
   * dropped it) never hangs the caller.
   */
  deadlineMs?: number;
}

export interface WatchHandle {
  /**
   * Settles when the stream ends: resolves when the server (or `stop`) closed it; rejects with a
   * `KubeApiError` when the request was refused (its `status`, e.g. 410 for a resourceVersion too old),
   * the connection failed, or the deadline passed (reason `Timeout`).
   */
  done: Promise<void>;
  /** Ends the stream; `done` resolves. */
  stop(): void;
}

/** Objects per page when the caller gives no pageSize; kubectl's chunk size. */
export const DEFAULT_PAGE_SIZE = 500;

/**
 * Every verb a resource's client can have, for objects of type `T`. Each resource has only the verbs the
 * service uses (`Resources`), as the Role grants them (k8s/rbac.yaml, derived from the same table).
 */
export interface ResourceClient<T extends KubeObject> {
  get(namespace: string, name: string): Promise<Stored<T> | undefined>;
  create(namespace: string, object: T): Promise<Stored<T>>;
  replace(namespace: string, object: T): Promise<Stored<T>>;
  delete(namespace: string, name: string): Promise<DeleteResult>;
  /**
   * `namespace` undefined lists across all namespaces; `selector` is a label selector in query syntax
   * (`a=b,c in (d)`), for events a field selector (`involvedObject.uid=…`).
   */
  list<U = Stored<T>>(
    namespace: string | undefined,
    selector?: string,
    pageSize?: number,
    select?: Select<Stored<T>, U>,
  ): Promise<ListResult<U>>;
  /**
   * Merges annotations into the object's (null removes one). With a resourceVersion, an object changed
   * since then is a ConflictError (so a marker only ever grows).
   */
  annotate(
    namespace: string,
    name: string,
    annotations: Record<string, string | null>,
    resourceVersion?: string,
  ): Promise<PatchResult>;
}

export type Verb = keyof ResourceClient<KubeObject>;
type Crud = 'get' | 'create' | 'replace' | 'delete';

/**
 * Every resource the port has a client for, by plural name: its object type and the verbs the service
 * uses, which are what the port offers and the Role grants (k8s/rbac.yaml is checked against this table).
 * Adding a kind is an entry here, in RESOURCE_SET and in the adapter's calls table; the compiler asks for
 * the other two.
 */
export interface ResourceKinds {
  /** apps/v1 Deployments: one per LRP. */
  deployments: { object: Deployment; verbs: Crud | 'list' };
  /** apps/v1 StatefulSets: one per LRP in the StatefulSet mode (OPI_WORKLOAD_KIND=statefulset). */
  statefulsets: { object: StatefulSet; verbs: Crud | 'list' };
  /** v1 Secrets: image pull credentials. */
  secrets: { object: Secret; verbs: Crud };
  /** policy/v1 PodDisruptionBudgets: one per LRP with more than one instance, never changed after. */
  poddisruptionbudgets: { object: PodDisruptionBudget; verbs: 'get' | 'create' | 'delete' };
  /** batch/v1 Jobs: tasks and staging; `delete` takes their pods with them (batch/v1 would orphan them). */
  jobs: { object: Job; verbs: 'get' | 'create' | 'delete' | 'list' | 'annotate' };
  /** v1 Pods: instance state, stopping one instance, crash markers. */
  pods: { object: Pod; verbs: 'get' | 'delete' | 'list' | 'annotate' };
  /** v1 Events: a pod's, for the words of a probe kill; StatefulSets' FailedCreate. */
  events: { object: CoreEvent; verbs: 'list' };
  /** coordination.k8s.io/v1 Leases: which worker writes the cache. */
  leases: { object: Lease; verbs: 'get' | 'create' | 'replace' };
}
export type ResourceName = keyof ResourceKinds;
/** Each resource's object type. */
export type ResourceObjects = { [R in ResourceName]: ResourceKinds[R]['object'] };
/** Each resource's verbs. */
export type ResourceVerbs = { [R in ResourceName]: ResourceKinds[R]['verbs'] };

/** Every resource the port has a client for (a record, so the compiler says when one is missing). */
const RESOURCE_SET: Record<ResourceName, true> = {
  deployments: true,
  statefulsets: true,
  secrets: true,
  poddisruptionbudgets: true,
  jobs: true,
  pods: true,
  events: true,
  leases: true,
};
export const RESOURCE_NAMES = Object.keys(RESOURCE_SET) as readonly ResourceName[];

export function isResourceName(name: string): name is ResourceName {
  return Object.hasOwn(RESOURCE_SET, name);
}

/** One resource's client: only its verbs. */
export type Client<R extends ResourceName> = Pick<ResourceClient<ResourceObjects[R]>, ResourceVerbs[R]>;

/** A typed client per resource, as client-go's clientset has. */
export type Resources = { readonly [R in ResourceName]: Client<R> };

export interface KubernetesPort extends Resources {
  getNamespace(name: string): Promise<Stored<Namespace> | undefined>;

  /** The API server's `/version` (readable by every client: no Role grants it). */
  getServerVersion(): Promise<ServerVersion>;

  /**
   * Streams changes of one kind (`namespace` undefined: every namespace). `onEvent` is called once per
   * line, in order, synchronously as it is read; an exception it throws ends the stream (`done` rejects
   * with it).
   */
  watch<R extends WatchedResource>(
    resource: R,
    namespace: string | undefined,
    options: WatchOptions,
    onEvent: (event: WatchEvent<Watched[R]>) => void,
  ): WatchHandle;
}
