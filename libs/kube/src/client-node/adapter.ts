/**
 * `KubernetesPort` over @kubernetes/client-node 1.4, which only the modules of this folder import: the
 * port's semantics over the calls of calls.ts, sent through the transport of transport.ts.
 *
 * - Answers are returned as the wire JSON the server sent, not client-node's typed models, which turn
 *   timestamps into Dates and drop fields they do not know.
 * - Every request but a watch waits for one of `maxConcurrentRequests` slots; every one, watches
 *   included, is reported to `onCall`. Watches are watch.ts.
 */
import type { KubeConfig } from '@kubernetes/client-node';
import { type ClientNodeCalls, type Page, type RawCalls, clientNodeCalls } from './calls.js';
import { type Answer, agentReuser, boundedConfiguration, invalidArgument, wireJson } from './transport.js';
import { openClientNodeWatch } from './watch.js';
import { type CallContext, classify, httpStatusOf } from '../port/errors.js';
import { type KubeConnection, clientNodeConfig } from './kubeconfig.js';
import type { KubeObject, Stored } from '../port/objects.js';
import type { Namespace } from '@opi/kube-objects';
import {
  type Client,
  DEFAULT_PAGE_SIZE,
  RESOURCE_NAMES,
  type Resources,
  type DeleteResult,
  type KubernetesPort,
  type ListResult,
  type PatchResult,
  type ResourceClient,
  type ResourceName,
  type ResourceObjects,
  type Select,
  type WatchEvent,
  type WatchHandle,
  type WatchOptions,
  type Watched,
  type WatchedResource,
  type ServerVersion,
} from '../port/port.js';
import { Semaphore } from './semaphore.js';

/** Kubernetes' own verb names (as in apiserver metrics); `update` is a replace (PUT). */
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
interface WireList {
  metadata?: { resourceVersion?: string; continue?: string };
  items?: unknown[];
}

/** A client per resource (Resources), each made in the constructor from its row of the calls table. */
// eslint-disable-next-line @typescript-eslint/no-unsafe-declaration-merging, @typescript-eslint/no-empty-object-type
export interface ClientNodeKubernetes extends Resources {}

// eslint-disable-next-line @typescript-eslint/no-unsafe-declaration-merging
export class ClientNodeKubernetes implements KubernetesPort {
  private readonly calls: ClientNodeCalls;
  private readonly slots: Semaphore;
  private readonly agents = agentReuser();
  private readonly onCall: ((call: KubeCallReport) => void) | undefined;
  private readonly kc: KubeConfig;

  constructor(connection: KubeConnection | KubeConfig, options: ClientNodeKubernetesOptions = {}) {
    const kc = clientNodeConfig(connection);
    this.kc = kc;
    const cluster = kc.getCurrentCluster();
    if (!cluster) throw new Error('the kubeconfig has no current cluster');
    const timeoutMs = options.requestTimeoutMs ?? DEFAULT_REQUEST_TIMEOUT_MS;
    if (!(timeoutMs > 0)) throw new RangeError('requestTimeoutMs must be > 0');
    this.calls = clientNodeCalls(boundedConfiguration(kc, cluster.server, timeoutMs, this.agents));
    this.slots = new Semaphore(options.maxConcurrentRequests ?? DEFAULT_MAX_CONCURRENT_REQUESTS);
    this.onCall = options.onCall;
    const clients = this as unknown as Record<ResourceName, unknown>;
    for (const r of RESOURCE_NAMES) clients[r] = this.client(this.calls[r]);
  }

  /** Closes the kept-alive connections to the apiserver (at shutdown; later calls open new ones). */
  close(): void {
    this.agents.destroy();
  }

  /** A resource's client: each verb its table entry has, over the shared mechanics below. */
  private client<R extends ResourceName>(calls: ClientNodeCalls[R]): Client<R> {
    type T = ResourceObjects[R];
    const raw = calls as { resource: R } & Partial<RawCalls<T>>;
    const { resource } = raw;
    const c: Partial<ResourceClient<T>> = {};
    const { get, create, replace, delete: remove, list, annotate } = raw;
    if (get) c.get = (namespace, name) => this.get<T>(resource, get, namespace, name);
    if (create) c.create = (namespace, o) => this.create(resource, create, namespace, o);
    if (replace) c.replace = (namespace, o) => this.replace(resource, replace, namespace, o);
    if (remove) c.delete = (namespace, name) => this.remove(resource, remove, namespace, name);
    if (list) {
      c.list = <U = Stored<T>>(
        namespace: string | undefined,
        selector?: string,
        pageSize?: number,
        select?: Select<Stored<T>, U>,
      ) => this.list(resource, list, namespace, selector, pageSize, select);
    }
    if (annotate) {
      c.annotate = (namespace, name, annotations, resourceVersion) => {
        // A resourceVersion in a merge patch is a precondition: the server answers 409 if it moved on.
        const metadata = { annotations, ...(resourceVersion ? { resourceVersion } : {}) };
        return this.patch(resource, annotate, namespace, name, { metadata });
      };
    }
    return c as Client<R>;
  }

  getNamespace(name: string): Promise<Stored<Namespace> | undefined> {
    return this.get<Namespace>('namespaces', (_namespace, n) => this.calls.namespace(n), '', name);
  }

  async getServerVersion(): Promise<ServerVersion> {
    const ctx = { verb: 'get', resource: 'version', name: '' } as const;
    try {
      const v = (await wireJson(await this.call(ctx, () => this.calls.version()))) as Partial<
        Record<keyof ServerVersion, unknown>
      >;
      const text = (x: unknown): string => (typeof x === 'string' ? x : '');
      return { major: text(v.major), minor: text(v.minor), gitVersion: text(v.gitVersion) };
    } catch (e) {
      throw classify(e, ctx);
    }
  }

  watch<R extends WatchedResource>(
    resource: R,
    namespace: string | undefined,
    options: WatchOptions,
    onEvent: (event: WatchEvent<Watched[R]>) => void,
  ): WatchHandle {
    const onEnd = (status: number | 'error', durationMs: number): void => {
      this.report({ verb: 'watch', resource, status, durationMs });
    };
    return openClientNodeWatch(
      { kc: this.kc, agents: this.agents, onEnd },
      resource,
      namespace,
      options,
      onEvent,
    );
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
    resource: string,
    send: RawCalls<T>['get'],
    namespace: string,
    name: string,
  ): Promise<Stored<T> | undefined> {
    const ctx = { verb: 'get', resource, namespace, name } as const;
    try {
      return (await wireJson(await this.call(ctx, () => send(namespace, name)))) as Stored<T>;
    } catch (e) {
      if (httpStatusOf(e) === 404) return undefined;
      throw classify(e, ctx);
    }
  }

  private async create<T extends KubeObject>(
    resource: string,
    send: RawCalls<T>['create'],
    namespace: string,
    o: T,
  ): Promise<Stored<T>> {
    const ctx = { verb: 'create', resource, namespace, name: o.metadata?.name } as const;
    try {
      return (await wireJson(await this.call(ctx, () => send(namespace, o)))) as Stored<T>;
    } catch (e) {
      throw classify(e, ctx);
    }
  }

  private async replace<T extends KubeObject>(
    resource: string,
    send: RawCalls<T>['replace'],
    namespace: string,
    o: T,
  ): Promise<Stored<T>> {
    const name = o.metadata?.name;
    const ctx = { verb: 'update', resource, namespace, name } as const;
    if (!name) throw invalidArgument('replace needs metadata.name', `update ${resource} ${namespace}`);
    try {
      return (await wireJson(await this.call(ctx, () => send(namespace, name, o)))) as Stored<T>;
    } catch (e) {
      throw classify(e, ctx);
    }
  }

  private async remove(
    resource: string,
    send: RawCalls<unknown>['delete'],
    namespace: string,
    name: string,
  ): Promise<DeleteResult> {
    const ctx = { verb: 'delete', resource, namespace, name } as const;
    try {
      await this.call(ctx, () => send(namespace, name));
      return 'deleted';
    } catch (e) {
      if (httpStatusOf(e) === 404) return 'absent';
      throw classify(e, ctx);
    }
  }

  private async patch(
    resource: string,
    send: RawCalls<unknown>['annotate'],
    namespace: string,
    name: string,
    patch: object,
  ): Promise<PatchResult> {
    const ctx = { verb: 'patch', resource, namespace, name } as const;
    try {
      await this.call(ctx, () => send(namespace, name, patch));
      return 'patched';
    } catch (e) {
      if (httpStatusOf(e) === 404) return 'absent';
      throw classify(e, ctx);
    }
  }

  /** Follows `continue` tokens; restarts when a token expires (410) between pages. */
  private async list<T extends KubeObject, U = Stored<T>>(
    resource: string,
    send: RawCalls<T>['list'],
    namespace: string | undefined,
    selector: string | undefined,
    pageSize: number | undefined,
    select?: Select<Stored<T>, U>,
  ): Promise<ListResult<U>> {
    const ctx = { verb: 'list', resource, namespace } as const;
    const keep = (select ?? ((item) => item)) as Select<unknown, U>;
    const limit = pageSize ?? DEFAULT_PAGE_SIZE;
    if (!Number.isInteger(limit) || limit < 1) {
      throw invalidArgument(`pageSize must be an integer ≥ 1, not ${limit}`, `list ${resource}`);
    }
    for (let restarts = 0; ; restarts++) {
      const items: U[] = [];
      let resourceVersion: string | undefined;
      let token: string | undefined;
      try {
        do {
          const page: Page = token === undefined ? { limit } : { limit, _continue: token };
          const list = (await wireJson(
            await this.call(ctx, () => send(namespace, page, selector)),
          )) as WireList;
          for (const item of list.items ?? []) {
            const kept = keep(item);
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
