/** Shared by the reflector tests: a scripted port whose lists and watches the test answers, and a harness. */
import { KubeApiError } from '../port/errors.js';
import type { Stored } from '../port/objects.js';
import type { Pod } from '@opi/kube-objects';
import type {
  ListResult,
  Select,
  WatchEvent,
  WatchHandle,
  WatchOptions,
  Watched,
  WatchedResource,
} from '../port/port.js';
import {
  type HeldVersion,
  Reflector,
  type ReflectorObserver,
  type ReflectorBaseOptions,
  type ReflectorPort,
  type ReflectorState,
  type SyncReason,
} from './reflector.js';

// --- a scripted port: each list and watch waits for the test to answer it -----------------------------

export interface ListRequest {
  resource: WatchedResource;
  namespace: string | undefined;
  labelSelector: string | undefined;
  pageSize: number | undefined;
  respond(objects: Stored<Pod>[], resourceVersion: string): void;
  fail(error: unknown): void;
}

export interface FakeWatch {
  resource: WatchedResource;
  namespace: string | undefined;
  options: WatchOptions;
  stopped: boolean;
  emit(event: WatchEvent<Stored<Pod>>): void;
  /** The server closes the stream. */
  end(): void;
  /** The request fails (`done` rejects). */
  fail(error: Error): void;
}

export class ScriptedPort implements ReflectorPort {
  readonly lists: ListRequest[] = [];
  /** Every list's answer, weakly: a reflector must not keep them. */
  readonly answers: WeakRef<object>[] = [];
  readonly watches: FakeWatch[] = [];

  readonly deployments = this.lister('deployments');
  readonly statefulsets = this.lister('statefulsets');
  readonly pods = this.lister('pods');
  readonly jobs = this.lister('jobs');
  readonly events = this.lister('events');

  /** A resource's client with only `list`, answered by the script. */
  private lister<R extends WatchedResource>(resource: R): ReflectorPort[R] {
    const list = <U>(
      namespace: string | undefined,
      selector?: string,
      pageSize?: number,
      select?: Select<Watched[R], U>,
    ): Promise<ListResult<U>> =>
      this.list(resource, namespace, selector, pageSize, select as Select<unknown, U> | undefined);
    return { list } as unknown as ReflectorPort[R];
  }

  private list<U>(
    resource: WatchedResource,
    namespace: string | undefined,
    labelSelector: string | undefined,
    pageSize: number | undefined,
    select: Select<unknown, U> | undefined,
  ): Promise<ListResult<U>> {
    return new Promise((resolve, reject) => {
      this.lists.push({
        resource,
        namespace,
        labelSelector,
        pageSize,
        respond: (objects, resourceVersion) => {
          const items: U[] = [];
          for (const o of objects) {
            const u = select ? select(o) : (o as U);
            if (u !== undefined) items.push(u);
          }
          const answer = { items, resourceVersion };
          this.answers.push(new WeakRef(answer));
          resolve(answer);
        },
        fail: reject,
      });
    });
  }

  watch<R extends WatchedResource>(
    resource: R,
    namespace: string | undefined,
    options: WatchOptions,
    onEvent: (event: WatchEvent<Watched[R]>) => void,
  ): WatchHandle {
    let settle: ((error?: Error) => void) | undefined;
    const done = new Promise<void>((resolve, reject) => {
      settle = (error) => {
        if (error === undefined) resolve();
        else reject(error);
      };
    });
    let open = true;
    const close = (error?: Error): void => {
      if (!open) return;
      open = false;
      settle?.(error);
    };
    const w: FakeWatch = {
      resource,
      namespace,
      options,
      stopped: false,
      emit: (event) => {
        if (!open) throw new Error('emit on a closed watch');
        try {
          onEvent(event as WatchEvent<Watched[R]>);
        } catch (e) {
          close(e as Error);
        }
      },
      end: () => {
        close();
      },
      fail: (error) => {
        close(error);
      },
    };
    this.watches.push(w);
    return {
      done,
      stop: () => {
        w.stopped = true;
        close();
      },
    };
  }
}

// --- helpers -------------------------------------------------------------------------------------------

export function pod(
  name: string,
  rv: string,
  phase: 'Pending' | 'Running' | 'Failed' = 'Running',
): Stored<Pod> {
  return {
    metadata: { name, namespace: 'ns', uid: `uid-${name}`, resourceVersion: rv, creationTimestamp: 't' },
    status: { phase },
  };
}

/** What the tests hold of a pod: its phase (a Failed pod is not wanted). */
export interface Proj {
  phase: string;
  rv: HeldVersion;
}
export const projectPod = (p: Stored<Pod>, rv: HeldVersion): Proj | undefined =>
  p.status?.phase === 'Failed' ? undefined : { phase: p.status?.phase ?? '', rv };

export async function flush(): Promise<void> {
  for (let i = 0; i < 5; i++) await new Promise((r) => setImmediate(r));
}

export async function until(what: string, check: () => boolean): Promise<void> {
  for (let i = 0; i < 200; i++) {
    if (check()) return;
    await new Promise((r) => setImmediate(r));
  }
  throw new Error(`never happened: ${what}`);
}

/** The n-th (from 1) of `items`, once there is one. */
async function nth<T>(items: T[], n: number, what: string): Promise<T> {
  await until(`${what} #${n}`, () => items.length >= n);
  const item = items[n - 1];
  if (item === undefined) throw new Error(`never happened: ${what} #${n}`);
  return item;
}

export class Harness {
  readonly port = new ScriptedPort();
  readonly log: string[] = [];
  readonly sleeps: number[] = [];
  readonly errors: { error: unknown; source: string; retryInMs?: number | undefined }[] = [];
  readonly restarts: string[] = [];
  readonly relists: { reason: SyncReason; upserted: number; deleted: number; detail?: string | undefined }[] =
    [];
  readonly events: string[] = [];
  readonly states: ReflectorState[] = [];
  readonly projected: string[] = [];
  clock = 1_000_000;
  rand = 0;
  readonly reflector: Reflector<'pods', Proj>;

  constructor(options: Partial<ReflectorBaseOptions<Proj>> = {}) {
    const observer: ReflectorObserver = {
      onEvent: (type) => this.events.push(type),
      onRelist: (reason, stats) =>
        this.relists.push({
          reason,
          upserted: stats.upserted,
          deleted: stats.deleted,
          detail: stats.detail,
        }),
      onWatchRestart: (reason) => this.restarts.push(reason),
      onError: (error, info) => this.errors.push({ error, source: info.source, retryInMs: info.retryInMs }),
      onStateChange: (state) => this.states.push(state),
    };
    this.reflector = new Reflector<'pods', Proj>({
      kube: this.port,
      resource: 'pods',
      namespace: 'ns',
      labelSelector: 'app=x',
      project: (p, rv) => {
        this.projected.push(p.metadata.name);
        return projectPod(p, rv);
      },
      handler: {
        onUpsert: (key, next, prev) =>
          this.log.push(`upsert ${key} ${next.rv}${prev ? ` (was ${prev.rv})` : ''}`),
        onDelete: (key, prev) => this.log.push(`delete ${key} (was ${prev.rv})`),
        onSynced: (reason) => this.log.push(`synced ${reason}`),
      },
      observer,
      now: () => this.clock,
      sleep: (ms) => {
        this.sleeps.push(ms);
        return Promise.resolve();
      },
      random: () => this.rand,
      ...options,
    });
    stopAfterTest(this.reflector);
  }

  list(n: number): Promise<ListRequest> {
    return nth(this.port.lists, n, 'list');
  }

  watch(n: number): Promise<FakeWatch> {
    return nth(this.port.watches, n, 'watch');
  }

  /** Starts, answers the first list with `objects`, and returns the first watch. */
  async started(objects: Stored<Pod>[], rv = '10'): Promise<FakeWatch> {
    this.reflector.start();
    (await this.list(1)).respond(objects, rv);
    await this.reflector.synced;
    const w = await this.watch(1);
    this.log.length = 0;
    this.projected.length = 0;
    return w;
  }
}

const running: { stop(): Promise<void> }[] = [];

/** Stops `reflector` after the test (stopHarnesses does). */
export function stopAfterTest(reflector: { stop(): Promise<void> }): void {
  running.push(reflector);
}

/** Stops every reflector a Harness started (each test file runs it after each test). */
export async function stopHarnesses(): Promise<void> {
  await Promise.all(running.splice(0).map((r) => r.stop()));
}

export const expired = (): KubeApiError =>
  new KubeApiError({ status: 410, reason: 'Expired', message: 'too old resource version', transient: false });
export const unavailable = (retryAfterSeconds?: number): KubeApiError =>
  new KubeApiError({
    status: 503,
    reason: 'ServiceUnavailable',
    message: 'try later',
    transient: true,
    retryAfterSeconds,
  });

// --- the tests -----------------------------------------------------------------------------------------
