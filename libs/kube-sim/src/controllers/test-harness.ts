/**
 * A store with the garbage collector and the controllers running, for the controllers' tests: objects are
 * created through the store, and tests wait for behaviour with `eventually` (a deadline, never a sleep).
 * It claims a pod range of its own as a simulator does, so its pods' listeners never meet another's.
 */
import { type BehaviourConfig, FAST_BEHAVIOUR } from '../behaviour.js';
import { GarbageCollector } from '../gc.js';
import { type PodRange, claimPodRange } from '../pod-range.js';
import { seededRandom } from '../random.js';
import { ResourceRegistry, type ResourceType } from '../resources.js';
import { Store, type StoreEvent } from '../store.js';
import type { KubeObject } from '../types.js';
import { type Controllers, startControllers } from './index.js';
import type { Container, EnvVar, PodStatus } from './pods.js';

export interface Harness {
  store: Store;
  controllers: Controllers;
  namespace: string;
  podRange: PodRange;
  type(group: string, plural: string): ResourceType;
  create(
    group: string,
    plural: string,
    body: Omit<KubeObject, 'metadata'> & { metadata: Partial<KubeObject['metadata']> },
  ): KubeObject;
  get(group: string, plural: string, name: string): KubeObject | undefined;
  pods(filter?: (p: KubeObject) => boolean): KubeObject[];
  events(involvedName?: string): KubeObject[];
  /** Every store event from now on, for checking invariants over a whole run. */
  record(): StoreEvent[];
  /** Stops the controllers; resolves once the pods' listeners are closed and the range is released. */
  stop(): Promise<void>;
}

export interface HarnessOptions {
  servePods?: boolean;
}

export async function startHarness(
  behaviour: Partial<BehaviourConfig> = {},
  options: HarnessOptions = {},
): Promise<Harness> {
  const podRange = await claimPodRange();
  const registry = new ResourceRegistry();
  const store = new Store(registry);
  const namespace = 'test';
  store.create(registry.get('', 'namespaces'), {
    apiVersion: 'v1',
    kind: 'Namespace',
    metadata: { name: namespace, uid: '', resourceVersion: '', creationTimestamp: '' },
  });
  const gc = new GarbageCollector(store);
  const controllers = startControllers(store, { ...FAST_BEHAVIOUR, ...behaviour }, seededRandom(1), {
    podRange,
    ...(options.servePods !== undefined ? { servePods: options.servePods } : {}),
  });
  const unsubscribers: (() => void)[] = [];
  let stopped: Promise<void> | undefined;
  return {
    store,
    controllers,
    namespace,
    podRange,
    type: (group, plural) => registry.get(group, plural),
    create: (group, plural, body) => {
      const t = registry.get(group, plural);
      return store.create(t, {
        ...body,
        metadata: {
          uid: '',
          resourceVersion: '',
          creationTimestamp: '',
          name: '',
          namespace,
          ...body.metadata,
        },
      } as KubeObject);
    },
    get: (group, plural, name) => store.get(registry.get(group, plural), namespace, name),
    pods: (filter) => store.all(registry.get('', 'pods'), namespace).filter((p) => !filter || filter(p)),
    events: (involvedName) =>
      store
        .all(registry.get('', 'events'))
        .filter(
          (e) =>
            !involvedName || (e['involvedObject'] as { name?: string } | undefined)?.name === involvedName,
        ),
    record: () => {
      const seen: StoreEvent[] = [];
      unsubscribers.push(store.subscribe((e) => seen.push(e)));
      return seen;
    },
    stop: () =>
      (stopped ??= (async () => {
        for (const u of unsubscribers) u();
        gc.stop();
        await controllers.stop();
        await podRange.release();
      })()),
  };
}

/** Polls until check returns a truthy value (returned), or fails after the deadline with what it last saw. */
export async function eventually<T>(
  check: () => T | undefined | null | false,
  what: string,
  timeoutMs = 10_000,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const v = check();
      if (v) return v;
      last = v;
    } catch (err) {
      last = err;
    }
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what} (last: ${String(last)})`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

export function env(vars: Record<string, string>): EnvVar[] {
  return Object.entries(vars).map(([name, value]) => ({ name, value }));
}

export function container(overrides: Partial<Container> = {}): Container {
  return { name: 'app', image: 'nginx:1.25', ...overrides };
}

export function podTemplate(
  labels: Record<string, string>,
  containers: Container[],
  extra: Record<string, unknown> = {},
) {
  return { metadata: { labels }, spec: { containers, ...extra } };
}

export function deploymentBody(
  name: string,
  replicas: number,
  containers: Container[] = [container()],
  spec: Record<string, unknown> = {},
) {
  return {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name },
    spec: {
      replicas,
      selector: { matchLabels: { app: name } },
      template: podTemplate({ app: name }, containers),
      ...spec,
    },
  };
}

export function status(o: KubeObject | undefined): PodStatus {
  return (o?.['status'] ?? {}) as PodStatus;
}

export function isPodReady(p: KubeObject): boolean {
  return status(p).conditions?.some((c) => c.type === 'Ready' && c.status === 'True') ?? false;
}
