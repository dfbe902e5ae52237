/**
 * `KubernetesPort` over @kubernetes/client-node 1.4: the only module (with kubeconfig.ts) that imports it.
 *
 * How client-node is used, and why:
 * - The API clients share one Configuration whose HTTP library bounds every request with an
 *   AbortController: client-node 1.x has no request time-out of its own, and an http.Agent `timeout`
 *   only emits an event that node-fetch ignores. The library also reads the whole body inside that
 *   window, so a server that stalls mid-body times out too.
 * - Answers are returned as the wire JSON the server sent, not client-node's typed models, which turn
 *   timestamps into Dates and drop fields they do not know; client-node is not even given a 2xx body to
 *   model (see wireBody), which would cost as much again as the adapter's own parse.
 *   Requests go the other way unchanged: client-node's serializer passes string timestamps through, and
 *   no model of the kinds used here renames a field.
 * - Patches go with `setHeaderOptions('Content-Type', PatchStrategy.MergePatch)`: client-node would
 *   otherwise label a merge patch as a JSON patch, which a real apiserver refuses.
 * - Connections are kept alive and reused: client-node 1.4 builds a new https.Agent for every request
 *   (KubeConfig.applySecurityAuthentication), so every call paid a TCP and TLS handshake. The HTTP
 *   library swaps it for one keep-alive agent per distinct set of TLS options (a rotated client
 *   certificate gets a new agent).
 * - Watches do not go through client-node's `Watch` (see watch-stream.ts) nor take a concurrency slot:
 *   they live for minutes. They take the kubeconfig's credentials per stream (applyToFetchOptions) and
 *   a connection of their own from the same kept-alive agents.
 */
import { createHash } from 'node:crypto';
import { Agent as HttpAgent } from 'node:http';
import { Agent as HttpsAgent } from 'node:https';
import {
  AppsV1Api,
  BatchV1Api,
  CoordinationV1Api,
  CoreV1Api,
  IsomorphicFetchHttpLibrary,
  VersionApi,
  type KubeConfig,
  PatchStrategy,
  PolicyV1Api,
  ResponseContext,
  ServerConfiguration,
  createConfiguration,
  setHeaderOptions,
  wrapHttpLibrary,
  type HttpLibrary,
} from '@kubernetes/client-node';
import { type CallContext, KubeApiError, classify, httpStatusOf, requestTimeoutError } from './errors.js';
import { type KubeConnection, clientNodeConfig } from './kubeconfig.js';
import type {
  CoreEvent,
  Deployment,
  Job,
  KubeObject,
  Lease,
  Namespace,
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
import { Semaphore } from './semaphore.js';
import { openWatchStream } from './watch-stream.js';

/** Kubernetes' own verb names (as in apiserver metrics); `update` is a replace (PUT). */
const MERGE_PATCH = setHeaderOptions('Content-Type', PatchStrategy.MergePatch);

export type KubeVerb = 'get' | 'list' | 'create' | 'update' | 'patch' | 'delete' | 'watch';

export interface KubeCallReport {
  verb: KubeVerb;
  /** Plural resource name, e.g. `deployments`. */
  resource: string;
  /** The HTTP status, or 'error' when no answer arrived (network failure, time-out). */
  status: number | 'error';
  /**
   * Time on the wire, not counting the wait for a concurrency slot. One report per page of a list; one
   * per watch, when its stream ended (status 200 however it ended, once the server accepted it).
   */
  durationMs: number;
}

export interface ClientNodeKubernetesOptions {
  /** Per HTTP request, answer body included (default 30 s). */
  requestTimeoutMs?: number;
  /** Requests in flight at once; more wait in order (default 32). */
  maxConcurrentRequests?: number;
  /** Called after every HTTP request, e.g. for metrics; must not throw (exceptions are swallowed). */
  onCall?: (call: KubeCallReport) => void;
}

export const DEFAULT_REQUEST_TIMEOUT_MS = 30_000;
export const DEFAULT_MAX_CONCURRENT_REQUESTS = 32;
/** A list whose continue token expired (410) restarts from its first page at most this often. */
const LIST_RESTARTS = 2;
/** A watch's client deadline beyond the server's timeoutSeconds, and without one (see WatchOptions). */
const WATCH_DEADLINE_GRACE_MS = 30_000;
const WATCH_DEFAULT_DEADLINE_MS = 30 * 60_000;

/** The collection path of each watched kind, by API group and version. */
const WATCH_PATHS: Record<WatchedResource, string> = {
  deployments: '/apis/apps/v1',
  statefulsets: '/apis/apps/v1',
  pods: '/api/v1',
  jobs: '/apis/batch/v1',
};

/** What the generated `…WithHttpInfo` calls resolve to; the body is our buffered copy. */
interface Answer {
  httpStatusCode: number;
  body: { text(): Promise<string> };
}

interface Operations<T> {
  resource: string;
  read(namespace: string, name: string): Promise<Answer>;
  create(namespace: string, body: T): Promise<Answer>;
  replace(namespace: string, name: string, body: T): Promise<Answer>;
  remove(namespace: string, name: string): Promise<Answer>;
}

interface Page {
  limit: number;
  _continue?: string;
}

interface WireList {
  metadata?: { resourceVersion?: string; continue?: string };
  items?: unknown[];
}

/** Our object to client-node's request type. Sound because only the wire shape matters (see top). */
function body(o: KubeObject): never {
  return o as never;
}

/** Where the adapter finds an answer's bytes as the server sent them. */
const WIRE = Symbol('wire bytes');

interface WireBody {
  text(): Promise<string>;
  binary(): Promise<Buffer>;
  [WIRE]: Buffer;
}

/**
 * A response body for client-node. Of a 2xx, client-node would parse the JSON again and build typed
 * models that the adapter never reads (it reads the wire JSON, see top); for a 500-pod list page that
 * was as much CPU and garbage as the adapter's own parse. So it is handed `{}` to build its model from,
 * and the bytes stay under WIRE. An error's body stays whole: client-node puts it in its ApiException.
 */
function wireBody(data: Buffer, status: number): WireBody {
  const ok = status >= 200 && status < 300;
  return {
    text: () => Promise.resolve(ok ? '{}' : data.toString('utf8')),
    binary: () => Promise.resolve(ok ? Buffer.from('{}') : data),
    [WIRE]: data,
  };
}

async function wireJson(answer: Answer): Promise<unknown> {
  const bytes = (answer.body as Partial<WireBody>)[WIRE];
  return JSON.parse(bytes ? bytes.toString('utf8') : await answer.body.text()) as unknown;
}

function invalidArgument(message: string, operation: string): KubeApiError {
  return new KubeApiError({ status: undefined, reason: 'ClientError', message, transient: false, operation });
}

/** The TLS options of an agent client-node built, as a key: agents with equal keys are interchangeable. */
function agentKey(agent: HttpAgent | HttpsAgent): string {
  const o = (agent as { options?: Record<string, unknown> }).options ?? {};
  const h = createHash('sha256');
  h.update(agent instanceof HttpsAgent ? 'https' : 'http');
  for (const k of ['ca', 'cert', 'key', 'pfx', 'passphrase', 'rejectUnauthorized', 'servername']) {
    const v = o[k];
    h.update(`|${k}=`);
    if (typeof v === 'string' || Buffer.isBuffer(v)) h.update(v);
    else if (v !== undefined) h.update(JSON.stringify(v) ?? '');
  }
  return h.digest('hex');
}

interface AgentReuser {
  reuse(agent: HttpAgent | HttpsAgent): HttpAgent | HttpsAgent;
  /** Closes the kept-alive connections. */
  destroy(): void;
}

/** One keep-alive agent per distinct TLS options, in place of client-node's agent per request. */
function agentReuser(): AgentReuser {
  const agents = new Map<string, HttpAgent | HttpsAgent>();
  const destroy = (): void => {
    for (const a of agents.values()) a.destroy();
    agents.clear();
  };
  const reuse = (agent: HttpAgent | HttpsAgent): HttpAgent | HttpsAgent => {
    // A proxy agent (socks, http(s) proxy) is not ours to replace.
    if (agent.constructor !== HttpsAgent && agent.constructor !== HttpAgent) return agent;
    const key = agentKey(agent);
    let shared = agents.get(key);
    if (!shared) {
      const options = { ...(agent as { options?: object }).options, keepAlive: true };
      shared = agent instanceof HttpsAgent ? new HttpsAgent(options) : new HttpAgent(options);
      // Credentials rotate rarely; a few stale agents are dropped rather than kept forever.
      if (agents.size >= 8) destroy();
      agents.set(key, shared);
    }
    agent.destroy();
    return shared;
  };
  return { reuse, destroy };
}

/** fetch with an AbortController per request and reused connections; see the module comment. */
function boundedHttpLibrary(timeoutMs: number, agents: AgentReuser): HttpLibrary {
  const fetchLibrary = new IsomorphicFetchHttpLibrary();
  return wrapHttpLibrary({
    async send(request) {
      const agent = request.getAgent();
      if (agent) request.setAgent(agents.reuse(agent));
      const controller = new AbortController();
      const timer = setTimeout(() => {
        controller.abort();
      }, timeoutMs);
      request.setSignal(controller.signal);
      try {
        const response = await fetchLibrary.send(request).toPromise();
        const data = await response.body.binary();
        return new ResponseContext(
          response.httpStatusCode,
          response.headers,
          wireBody(data, response.httpStatusCode),
        );
      } catch (e) {
        if (controller.signal.aborted) throw requestTimeoutError(timeoutMs);
        throw e;
      } finally {
        clearTimeout(timer);
      }
    },
  });
}

export class ClientNodeKubernetes implements KubernetesPort {
  private readonly core: CoreV1Api;
  private readonly slots: Semaphore;
  private readonly agents = agentReuser();
  private readonly onCall: ((call: KubeCallReport) => void) | undefined;
  private readonly deployments: Operations<Deployment>;
  private readonly statefulSets: Operations<StatefulSet>;
  private readonly secrets: Operations<Secret>;
  private readonly pdbs: Operations<PodDisruptionBudget>;
  private readonly jobs: Operations<Job>;
  private readonly leases: Operations<Lease>;
  private readonly kc: KubeConfig;
  private readonly apps: AppsV1Api;
  private readonly batch: BatchV1Api;
  private readonly version: VersionApi;

  constructor(connection: KubeConnection | KubeConfig, options: ClientNodeKubernetesOptions = {}) {
    const kc = clientNodeConfig(connection);
    this.kc = kc;
    const cluster = kc.getCurrentCluster();
    if (!cluster) throw new Error('the kubeconfig has no current cluster');
    const timeoutMs = options.requestTimeoutMs ?? DEFAULT_REQUEST_TIMEOUT_MS;
    if (!(timeoutMs > 0)) throw new RangeError('requestTimeoutMs must be > 0');
    // What kc.makeApiClient builds, plus our HTTP library.
    const configuration = createConfiguration({
      baseServer: new ServerConfiguration(cluster.server, {}),
      authMethods: { default: kc },
      httpApi: boundedHttpLibrary(timeoutMs, this.agents),
    });
    this.slots = new Semaphore(options.maxConcurrentRequests ?? DEFAULT_MAX_CONCURRENT_REQUESTS);
    this.onCall = options.onCall;
    const core = new CoreV1Api(configuration);
    const apps = new AppsV1Api(configuration);
    const batch = new BatchV1Api(configuration);
    const policy = new PolicyV1Api(configuration);
    const coordination = new CoordinationV1Api(configuration);
    this.core = core;
    this.apps = apps;
    this.batch = batch;
    this.version = new VersionApi(configuration);
    // Background propagation everywhere: for Jobs the batch/v1 default would orphan the pods; for the
    // rest it is the default anyway, and being explicit keeps the behaviour independent of the kind.
    const propagationPolicy = 'Background';
    this.deployments = {
      resource: 'deployments',
      read: (namespace, name) => apps.readNamespacedDeploymentWithHttpInfo({ namespace, name }),
      create: (namespace, o) => apps.createNamespacedDeploymentWithHttpInfo({ namespace, body: body(o) }),
      replace: (namespace, name, o) =>
        apps.replaceNamespacedDeploymentWithHttpInfo({ namespace, name, body: body(o) }),
      remove: (namespace, name) =>
        apps.deleteNamespacedDeploymentWithHttpInfo({ namespace, name, propagationPolicy }),
    };
    this.statefulSets = {
      resource: 'statefulsets',
      read: (namespace, name) => apps.readNamespacedStatefulSetWithHttpInfo({ namespace, name }),
      create: (namespace, o) => apps.createNamespacedStatefulSetWithHttpInfo({ namespace, body: body(o) }),
      replace: (namespace, name, o) =>
        apps.replaceNamespacedStatefulSetWithHttpInfo({ namespace, name, body: body(o) }),
      remove: (namespace, name) =>
        apps.deleteNamespacedStatefulSetWithHttpInfo({ namespace, name, propagationPolicy }),
    };
    this.secrets = {
      resource: 'secrets',
      read: (namespace, name) => core.readNamespacedSecretWithHttpInfo({ namespace, name }),
      create: (namespace, o) => core.createNamespacedSecretWithHttpInfo({ namespace, body: body(o) }),
      replace: (namespace, name, o) =>
        core.replaceNamespacedSecretWithHttpInfo({ namespace, name, body: body(o) }),
      remove: (namespace, name) =>
        core.deleteNamespacedSecretWithHttpInfo({ namespace, name, propagationPolicy }),
    };
    this.pdbs = {
      resource: 'poddisruptionbudgets',
      read: (namespace, name) => policy.readNamespacedPodDisruptionBudgetWithHttpInfo({ namespace, name }),
      create: (namespace, o) =>
        policy.createNamespacedPodDisruptionBudgetWithHttpInfo({ namespace, body: body(o) }),
      replace: (namespace, name, o) =>
        policy.replaceNamespacedPodDisruptionBudgetWithHttpInfo({ namespace, name, body: body(o) }),
      remove: (namespace, name) =>
        policy.deleteNamespacedPodDisruptionBudgetWithHttpInfo({ namespace, name, propagationPolicy }),
    };
    this.jobs = {
      resource: 'jobs',
      read: (namespace, name) => batch.readNamespacedJobWithHttpInfo({ namespace, name }),
      create: (namespace, o) => batch.createNamespacedJobWithHttpInfo({ namespace, body: body(o) }),
      replace: (namespace, name, o) =>
        batch.replaceNamespacedJobWithHttpInfo({ namespace, name, body: body(o) }),
      remove: (namespace, name) =>
        batch.deleteNamespacedJobWithHttpInfo({ namespace, name, propagationPolicy }),
    };
    this.leases = {
      resource: 'leases',
      read: (namespace, name) => coordination.readNamespacedLeaseWithHttpInfo({ namespace, name }),
      create: (namespace, o) => coordination.createNamespacedLeaseWithHttpInfo({ namespace, body: body(o) }),
      replace: (namespace, name, o) =>
        coordination.replaceNamespacedLeaseWithHttpInfo({ namespace, name, body: body(o) }),
      remove: (namespace, name) =>
        coordination.deleteNamespacedLeaseWithHttpInfo({ namespace, name, propagationPolicy }),
    };
  }

  /** Closes the kept-alive connections to the apiserver (at shutdown; later calls open new ones). */
  close(): void {
    this.agents.destroy();
  }

  // --- Deployments ---------------------------------------------------------------------------------------

  getDeployment(namespace: string, name: string): Promise<Stored<Deployment> | undefined> {
    return this.get(this.deployments, namespace, name);
  }
  createDeployment(namespace: string, deployment: Deployment): Promise<Stored<Deployment>> {
    return this.create(this.deployments, namespace, deployment);
  }
  replaceDeployment(namespace: string, deployment: Deployment): Promise<Stored<Deployment>> {
    return this.replace(this.deployments, namespace, deployment);
  }
  deleteDeployment(namespace: string, name: string): Promise<DeleteResult> {
    return this.remove(this.deployments, namespace, name);
  }
  async listDeployments<U = Stored<Deployment>>(
    namespace: string | undefined,
    labelSelector?: string,
    pageSize?: number,
    select?: Select<Stored<Deployment>, U>,
  ): Promise<ListResult<U>> {
    const result = await this.list(
      'deployments',
      namespace,
      pageSize,
      (page) =>
        namespace === undefined
          ? this.apps.listDeploymentForAllNamespacesWithHttpInfo({ ...page, labelSelector })
          : this.apps.listNamespacedDeploymentWithHttpInfo({ ...page, namespace, labelSelector }),
      select as Select<unknown, unknown> | undefined,
    );
    return result as ListResult<U>;
  }

  // --- StatefulSets --------------------------------------------------------------------------------------

  getStatefulSet(namespace: string, name: string): Promise<Stored<StatefulSet> | undefined> {
    return this.get(this.statefulSets, namespace, name);
  }
  createStatefulSet(namespace: string, statefulSet: StatefulSet): Promise<Stored<StatefulSet>> {
    return this.create(this.statefulSets, namespace, statefulSet);
  }
  replaceStatefulSet(namespace: string, statefulSet: StatefulSet): Promise<Stored<StatefulSet>> {
    return this.replace(this.statefulSets, namespace, statefulSet);
  }
  deleteStatefulSet(namespace: string, name: string): Promise<DeleteResult> {
    return this.remove(this.statefulSets, namespace, name);
  }
  async listStatefulSets<U = Stored<StatefulSet>>(
    namespace: string | undefined,
    labelSelector?: string,
    pageSize?: number,
    select?: Select<Stored<StatefulSet>, U>,
  ): Promise<ListResult<U>> {
    const result = await this.list(
      'statefulsets',
      namespace,
      pageSize,
      (page) =>
        namespace === undefined
          ? this.apps.listStatefulSetForAllNamespacesWithHttpInfo({ ...page, labelSelector })
          : this.apps.listNamespacedStatefulSetWithHttpInfo({ ...page, namespace, labelSelector }),
      select as Select<unknown, unknown> | undefined,
    );
    return result as ListResult<U>;
  }

  // --- Secrets -------------------------------------------------------------------------------------------

  getSecret(namespace: string, name: string): Promise<Stored<Secret> | undefined> {
    return this.get(this.secrets, namespace, name);
  }
  createSecret(namespace: string, secret: Secret): Promise<Stored<Secret>> {
    return this.create(this.secrets, namespace, secret);
  }
  replaceSecret(namespace: string, secret: Secret): Promise<Stored<Secret>> {
    return this.replace(this.secrets, namespace, secret);
  }
  deleteSecret(namespace: string, name: string): Promise<DeleteResult> {
    return this.remove(this.secrets, namespace, name);
  }

  // --- PodDisruptionBudgets ------------------------------------------------------------------------------

  getPodDisruptionBudget(namespace: string, name: string): Promise<Stored<PodDisruptionBudget> | undefined> {
    return this.get(this.pdbs, namespace, name);
  }
  createPodDisruptionBudget(
    namespace: string,
    pdb: PodDisruptionBudget,
  ): Promise<Stored<PodDisruptionBudget>> {
    return this.create(this.pdbs, namespace, pdb);
  }
  replacePodDisruptionBudget(
    namespace: string,
    pdb: PodDisruptionBudget,
  ): Promise<Stored<PodDisruptionBudget>> {
    return this.replace(this.pdbs, namespace, pdb);
  }
  deletePodDisruptionBudget(namespace: string, name: string): Promise<DeleteResult> {
    return this.remove(this.pdbs, namespace, name);
  }

  // --- Jobs ----------------------------------------------------------------------------------------------

  getJob(namespace: string, name: string): Promise<Stored<Job> | undefined> {
    return this.get(this.jobs, namespace, name);
  }
  createJob(namespace: string, job: Job): Promise<Stored<Job>> {
    return this.create(this.jobs, namespace, job);
  }
  replaceJob(namespace: string, job: Job): Promise<Stored<Job>> {
    return this.replace(this.jobs, namespace, job);
  }
  deleteJob(namespace: string, name: string): Promise<DeleteResult> {
    return this.remove(this.jobs, namespace, name);
  }

  // --- Pods, Events, Namespaces --------------------------------------------------------------------------

  async listPods<U = Stored<Pod>>(
    namespace: string | undefined,
    labelSelector?: string,
    pageSize?: number,
    select?: Select<Stored<Pod>, U>,
  ): Promise<ListResult<U>> {
    const result = await this.list(
      'pods',
      namespace,
      pageSize,
      (page) =>
        namespace === undefined
          ? this.core.listPodForAllNamespacesWithHttpInfo({ ...page, labelSelector })
          : this.core.listNamespacedPodWithHttpInfo({ ...page, namespace, labelSelector }),
      select as Select<unknown, unknown> | undefined,
    );
    return result as ListResult<U>;
  }

  async getPod(namespace: string, name: string): Promise<Stored<Pod> | undefined> {
    const ctx = { verb: 'get', resource: 'pods', namespace, name } as const;
    try {
      return (await wireJson(
        await this.call(ctx, () => this.core.readNamespacedPodWithHttpInfo({ namespace, name })),
      )) as Stored<Pod>;
    } catch (e) {
      if (httpStatusOf(e) === 404) return undefined;
      throw classify(e, ctx);
    }
  }

  annotatePod(
    namespace: string,
    name: string,
    annotations: Record<string, string | null>,
    resourceVersion?: string,
  ): Promise<PatchResult> {
    // A resourceVersion in a merge patch is a precondition: the server answers 409 if it moved on.
    const metadata = { annotations, ...(resourceVersion ? { resourceVersion } : {}) };
    return this.annotate({ verb: 'patch', resource: 'pods', namespace, name }, () =>
      this.core.patchNamespacedPodWithHttpInfo({ namespace, name, body: { metadata } }, MERGE_PATCH),
    );
  }

  annotateJob(
    namespace: string,
    name: string,
    annotations: Record<string, string | null>,
  ): Promise<PatchResult> {
    return this.annotate({ verb: 'patch', resource: 'jobs', namespace, name }, () =>
      this.batch.patchNamespacedJobWithHttpInfo(
        { namespace, name, body: { metadata: { annotations } } },
        MERGE_PATCH,
      ),
    );
  }

  async listJobs<U = Stored<Job>>(
    namespace: string | undefined,
    labelSelector?: string,
    pageSize?: number,
    select?: Select<Stored<Job>, U>,
  ): Promise<ListResult<U>> {
    const result = await this.list(
      'jobs',
      namespace,
      pageSize,
      (page) =>
        namespace === undefined
          ? this.batch.listJobForAllNamespacesWithHttpInfo({ ...page, labelSelector })
          : this.batch.listNamespacedJobWithHttpInfo({ ...page, namespace, labelSelector }),
      select as Select<unknown, unknown> | undefined,
    );
    return result as ListResult<U>;
  }

  private async annotate<A extends Answer>(
    ctx: CallContext & { verb: KubeVerb },
    send: () => Promise<A>,
  ): Promise<PatchResult> {
    try {
      await this.call(ctx, send);
      return 'patched';
    } catch (e) {
      if (httpStatusOf(e) === 404) return 'absent';
      throw classify(e, ctx);
    }
  }

  async deletePod(namespace: string, name: string): Promise<DeleteResult> {
    const ctx = { verb: 'delete', resource: 'pods', namespace, name } as const;
    try {
      await this.call(ctx, () => this.core.deleteNamespacedPodWithHttpInfo({ namespace, name }));
      return 'deleted';
    } catch (e) {
      if (httpStatusOf(e) === 404) return 'absent';
      throw classify(e, ctx);
    }
  }

  async listEvents(
    namespace: string | undefined,
    fieldSelector?: string,
    pageSize?: number,
  ): Promise<ListResult<Stored<CoreEvent>>> {
    const result = await this.list('events', namespace, pageSize, (page) =>
      namespace === undefined
        ? this.core.listEventForAllNamespacesWithHttpInfo({ ...page, fieldSelector })
        : this.core.listNamespacedEventWithHttpInfo({ ...page, namespace, fieldSelector }),
    );
    return result as ListResult<Stored<CoreEvent>>;
  }

  async getNamespace(name: string): Promise<Stored<Namespace> | undefined> {
    const ctx = { verb: 'get', resource: 'namespaces', name } as const;
    try {
      return (await wireJson(
        await this.call(ctx, () => this.core.readNamespaceWithHttpInfo({ name })),
      )) as Stored<Namespace>;
    } catch (e) {
      if (httpStatusOf(e) === 404) return undefined;
      throw classify(e, ctx);
    }
  }

  async getServerVersion(): Promise<ServerVersion> {
    const ctx = { verb: 'get', resource: 'version', name: '' } as const;
    try {
      const v = (await wireJson(await this.call(ctx, () => this.version.getCodeWithHttpInfo()))) as Partial<
        Record<keyof ServerVersion, unknown>
      >;
      const text = (x: unknown): string => (typeof x === 'string' ? x : '');
      return { major: text(v.major), minor: text(v.minor), gitVersion: text(v.gitVersion) };
    } catch (e) {
      throw classify(e, ctx);
    }
  }

  // --- Watches ------------------------------------------------------------------------------------------

  watch<R extends WatchedResource>(
    resource: R,
    namespace: string | undefined,
    options: WatchOptions,
    onEvent: (event: WatchEvent<Watched[R]>) => void,
  ): WatchHandle {
    const ctx = { verb: 'watch', resource, namespace } as const;
    const { timeoutSeconds } = options;
    const deadlineMs =
      options.deadlineMs ??
      (timeoutSeconds !== undefined
        ? timeoutSeconds * 1000 + WATCH_DEADLINE_GRACE_MS
        : WATCH_DEFAULT_DEADLINE_MS);
    const refuse = (message: string): WatchHandle => ({
      done: Promise.reject(invalidArgument(message, `watch ${resource}`)),
      stop: () => undefined,
    });
    if (timeoutSeconds !== undefined && !(Number.isInteger(timeoutSeconds) && timeoutSeconds >= 0)) {
      return refuse(`timeoutSeconds must be an integer ≥ 0, not ${timeoutSeconds}`);
    }
    if (!(deadlineMs > 0)) return refuse(`deadlineMs must be > 0, not ${deadlineMs}`);
    const query = new URLSearchParams({ watch: 'true' });
    if (options.labelSelector) query.set('labelSelector', options.labelSelector);
    if (options.resourceVersion) query.set('resourceVersion', options.resourceVersion);
    if (options.allowWatchBookmarks) query.set('allowWatchBookmarks', 'true');
    if (timeoutSeconds !== undefined) query.set('timeoutSeconds', String(timeoutSeconds));
    const scope = namespace === undefined ? '' : `/namespaces/${encodeURIComponent(namespace)}`;
    const path = `${WATCH_PATHS[resource]}${scope}/${resource}?${query.toString()}`;
    return openWatchStream({
      context: ctx,
      deadlineMs,
      onEvent: onEvent as (event: unknown) => void,
      onEnd: (status, durationMs) => {
        this.report({ verb: 'watch', resource, status, durationMs });
      },
      prepare: async () => {
        const cluster = this.kc.getCurrentCluster();
        if (!cluster) throw new Error('the kubeconfig has no current cluster');
        // The kubeconfig's credentials as client-node applies them (token, client certificate, exec).
        const init = await this.kc.applyToFetchOptions({});
        const headers: Record<string, string> = {};
        const given = init.headers as { forEach?(f: (value: string, key: string) => void): void } | undefined;
        given?.forEach?.((value, key) => {
          headers[key] = value;
        });
        const agent = init.agent;
        return {
          url: new URL(`${cluster.server}${path}`),
          headers,
          agent: agent instanceof HttpAgent ? this.agents.reuse(agent) : undefined,
        };
      },
    });
  }

  // --- Leases --------------------------------------------------------------------------------------------

  getLease(namespace: string, name: string): Promise<Stored<Lease> | undefined> {
    return this.get(this.leases, namespace, name);
  }
  createLease(namespace: string, lease: Lease): Promise<Stored<Lease>> {
    return this.create(this.leases, namespace, lease);
  }
  replaceLease(namespace: string, lease: Lease): Promise<Stored<Lease>> {
    return this.replace(this.leases, namespace, lease);
  }

  // --- the shared mechanics ------------------------------------------------------------------------------

  /** One HTTP request: waits for a slot, reports the outcome, rethrows client errors unclassified. */
  private async call<A extends Answer>(
    ctx: CallContext & { verb: KubeVerb },
    send: () => Promise<A>,
  ): Promise<A> {
    const release = await this.slots.acquire();
    const started = performance.now();
    let status: number | 'error' = 'error';
    try {
      const answer = await send();
      status = answer.httpStatusCode;
      return answer;
    } catch (e) {
      status = httpStatusOf(e) ?? 'error';
      throw e;
    } finally {
      release();
      this.report({
        verb: ctx.verb,
        resource: ctx.resource,
        status,
        durationMs: performance.now() - started,
      });
    }
  }

  private report(call: KubeCallReport): void {
    try {
      this.onCall?.(call);
    } catch {
      // Metrics must never fail a Kubernetes call.
    }
  }

  private async get<T extends KubeObject>(
    ops: Operations<T>,
    namespace: string,
    name: string,
  ): Promise<Stored<T> | undefined> {
    const ctx = { verb: 'get', resource: ops.resource, namespace, name } as const;
    try {
      return (await wireJson(await this.call(ctx, () => ops.read(namespace, name)))) as Stored<T>;
    } catch (e) {
      if (httpStatusOf(e) === 404) return undefined;
      throw classify(e, ctx);
    }
  }

  private async create<T extends KubeObject>(
    ops: Operations<T>,
    namespace: string,
    o: T,
  ): Promise<Stored<T>> {
    const ctx = { verb: 'create', resource: ops.resource, namespace, name: o.metadata?.name } as const;
    try {
      return (await wireJson(await this.call(ctx, () => ops.create(namespace, o)))) as Stored<T>;
    } catch (e) {
      throw classify(e, ctx);
    }
  }

  private async replace<T extends KubeObject>(
    ops: Operations<T>,
    namespace: string,
    o: T,
  ): Promise<Stored<T>> {
    const name = o.metadata?.name;
    const ctx = { verb: 'update', resource: ops.resource, namespace, name } as const;
    if (!name) throw invalidArgument('replace needs metadata.name', `update ${ops.resource} ${namespace}`);
    try {
      return (await wireJson(await this.call(ctx, () => ops.replace(namespace, name, o)))) as Stored<T>;
    } catch (e) {
      throw classify(e, ctx);
    }
  }

  private async remove<T extends KubeObject>(
    ops: Operations<T>,
    namespace: string,
    name: string,
  ): Promise<DeleteResult> {
    const ctx = { verb: 'delete', resource: ops.resource, namespace, name } as const;
    try {
      await this.call(ctx, () => ops.remove(namespace, name));
      return 'deleted';
    } catch (e) {
      if (httpStatusOf(e) === 404) return 'absent';
      throw classify(e, ctx);
    }
  }

  /** Follows `continue` tokens; restarts when a token expires (410) between pages. */
  private async list(
    resource: string,
    namespace: string | undefined,
    pageSize: number | undefined,
    fetchPage: (page: Page) => Promise<Answer>,
    select: Select<unknown, unknown> = (item) => item,
  ): Promise<ListResult<unknown>> {
    const ctx = { verb: 'list', resource, namespace } as const;
    const limit = pageSize ?? DEFAULT_PAGE_SIZE;
    if (!Number.isInteger(limit) || limit < 1) {
      throw invalidArgument(`pageSize must be an integer ≥ 1, not ${limit}`, `list ${resource}`);
    }
    for (let restarts = 0; ; restarts++) {
      const items: unknown[] = [];
      let resourceVersion: string | undefined;
      let token: string | undefined;
      try {
        do {
          const page: Page = token === undefined ? { limit } : { limit, _continue: token };
          const list = (await wireJson(await this.call(ctx, () => fetchPage(page)))) as WireList;
          for (const item of list.items ?? []) {
            const kept = select(item);
            if (kept !== undefined) items.push(kept);
          }
          resourceVersion ??= list.metadata?.resourceVersion;
          token = list.metadata?.continue || undefined;
        } while (token !== undefined);
        return { items, resourceVersion: resourceVersion ?? '' };
      } catch (e) {
        if (token !== undefined && httpStatusOf(e) === 410 && restarts < LIST_RESTARTS) continue;
        throw classify(e, ctx);
      }
    }
  }
}
