/**
 * The one way the workers reach Kubernetes. Implemented over client-node by `ClientNodeKubernetes`, which
 * keeps the semantics below (tests run it against the simulated cluster of @opi/kube-sim).
 *
 * Semantics shared by every method:
 * - `get*` resolves `undefined` when the object (or its namespace) does not exist.
 * - `delete*` resolves `'absent'` on 404: a delete that finds nothing has still reached its goal.
 * - `create*` rejects with `AlreadyExistsError` (409 AlreadyExists, permanent) when the name is taken.
 * - `replace*` is the update path: it sends the object's `metadata.resourceVersion` and rejects with
 *   `ConflictError` (409 Conflict, transient: re-read and retry) when the object changed since that
 *   version. Without a resourceVersion the API server replaces unconditionally. The name comes from
 *   `metadata.name`. Changes to `status` are ignored, as the status subresource owns it.
 * - `list*` follow `continue` tokens page by page (`pageSize` objects each, default 500) and resolve the
 *   whole collection with the list's resourceVersion (for a watch to start from). A `select` function
 *   maps each object as its page arrives (e.g. drops fields the caller does not read), so a listing of
 *   100,000 objects is never held whole.
 * - Everything else rejects with a `KubeApiError` whose `transient` says whether a retry can help.
 */
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
  Stored,
} from './objects.js';

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

export interface KubernetesPort {
  // apps/v1 Deployments: one per LRP.
  getDeployment(namespace: string, name: string): Promise<Stored<Deployment> | undefined>;
  createDeployment(namespace: string, deployment: Deployment): Promise<Stored<Deployment>>;
  replaceDeployment(namespace: string, deployment: Deployment): Promise<Stored<Deployment>>;
  deleteDeployment(namespace: string, name: string): Promise<DeleteResult>;
  /** `namespace` undefined lists across all namespaces; `labelSelector` in query syntax (`a=b,c in (d)`). */
  listDeployments<U = Stored<Deployment>>(
    namespace: string | undefined,
    labelSelector?: string,
    pageSize?: number,
    select?: Select<Stored<Deployment>, U>,
  ): Promise<ListResult<U>>;

  // apps/v1 StatefulSets: one per LRP in the StatefulSet mode (OPI_WORKLOAD_KIND=statefulset).
  getStatefulSet(namespace: string, name: string): Promise<Stored<StatefulSet> | undefined>;
  createStatefulSet(namespace: string, statefulSet: StatefulSet): Promise<Stored<StatefulSet>>;
  replaceStatefulSet(namespace: string, statefulSet: StatefulSet): Promise<Stored<StatefulSet>>;
  deleteStatefulSet(namespace: string, name: string): Promise<DeleteResult>;
  listStatefulSets<U = Stored<StatefulSet>>(
    namespace: string | undefined,
    labelSelector?: string,
    pageSize?: number,
    select?: Select<Stored<StatefulSet>, U>,
  ): Promise<ListResult<U>>;

  // v1 Secrets: image pull credentials and app environment.
  getSecret(namespace: string, name: string): Promise<Stored<Secret> | undefined>;
  createSecret(namespace: string, secret: Secret): Promise<Stored<Secret>>;
  replaceSecret(namespace: string, secret: Secret): Promise<Stored<Secret>>;
  deleteSecret(namespace: string, name: string): Promise<DeleteResult>;

  // policy/v1 PodDisruptionBudgets: one per LRP with more than one instance.
  getPodDisruptionBudget(namespace: string, name: string): Promise<Stored<PodDisruptionBudget> | undefined>;
  createPodDisruptionBudget(
    namespace: string,
    pdb: PodDisruptionBudget,
  ): Promise<Stored<PodDisruptionBudget>>;
  replacePodDisruptionBudget(
    namespace: string,
    pdb: PodDisruptionBudget,
  ): Promise<Stored<PodDisruptionBudget>>;
  deletePodDisruptionBudget(namespace: string, name: string): Promise<DeleteResult>;

  // batch/v1 Jobs: tasks and staging.
  getJob(namespace: string, name: string): Promise<Stored<Job> | undefined>;
  createJob(namespace: string, job: Job): Promise<Stored<Job>>;
  replaceJob(namespace: string, job: Job): Promise<Stored<Job>>;
  /** Deletes the Job and, in the background, its pods (batch/v1 would orphan them by default). */
  deleteJob(namespace: string, name: string): Promise<DeleteResult>;

  listJobs<U = Stored<Job>>(
    namespace: string | undefined,
    labelSelector?: string,
    pageSize?: number,
    select?: Select<Stored<Job>, U>,
  ): Promise<ListResult<U>>;
  /** Merges annotations into a Job's (null removes one): marks what was reported about it. */
  annotateJob(
    namespace: string,
    name: string,
    annotations: Record<string, string | null>,
  ): Promise<PatchResult>;

  // v1 Pods: instance state, and stopping one instance.
  listPods<U = Stored<Pod>>(
    namespace: string | undefined,
    labelSelector?: string,
    pageSize?: number,
    select?: Select<Stored<Pod>, U>,
  ): Promise<ListResult<U>>;
  deletePod(namespace: string, name: string): Promise<DeleteResult>;
  getPod(namespace: string, name: string): Promise<Stored<Pod> | undefined>;
  /**
   * Merges annotations into a Pod's (null removes one): marks the crashes already reported. With a
   * resourceVersion, a pod changed since then is a ConflictError (so the marker only ever grows).
   */
  annotatePod(
    namespace: string,
    name: string,
    annotations: Record<string, string | null>,
    resourceVersion?: string,
  ): Promise<PatchResult>;

  /** v1 Events, e.g. `involvedObject.name=web-0,involvedObject.kind=Pod` (field selector syntax). */
  listEvents(
    namespace: string | undefined,
    fieldSelector?: string,
    pageSize?: number,
  ): Promise<ListResult<Stored<CoreEvent>>>;

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

  // coordination.k8s.io/v1 Leases: which worker writes the cache.
  getLease(namespace: string, name: string): Promise<Stored<Lease> | undefined>;
  createLease(namespace: string, lease: Lease): Promise<Stored<Lease>>;
  replaceLease(namespace: string, lease: Lease): Promise<Stored<Lease>>;
}
