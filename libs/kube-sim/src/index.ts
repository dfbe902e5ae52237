/**
 * @opi/kube-sim: a simulated Kubernetes cluster on loopback. `startSimulator()` runs the API server, the
 * garbage collector and the simulated control plane in-process; production code reaches it only over HTTP
 * through @kubernetes/client-node, exactly as it reaches a real cluster.
 */
import { randomBytes } from 'node:crypto';
import { rename, writeFile } from 'node:fs/promises';
import { ApiServer } from './api-server.js';
import { type BehaviourConfig, DEFAULT_BEHAVIOUR } from './behaviour.js';
import { type Controllers, startControllers } from './controllers/index.js';
import { Faults } from './faults.js';
import { GarbageCollector } from './gc.js';
import { kubeconfigYaml } from './kubeconfig.js';
import { POD_RANGE_ENV, type PodRangeClaim, claimPodRange, parsePodRange } from './pod-range.js';
import { seededRandom } from './random.js';
import { ResourceRegistry } from './resources.js';
import { Store } from './store.js';

export interface SimulatorOptions {
  /** 0 (the default) picks a free port. */
  port?: number;
  host?: string;
  /**
   * Host that `url` and the kubeconfig name, when clients reach the simulator by another name than the
   * bound address (e.g. a compose service name with host 0.0.0.0). Default: host, or 127.0.0.1 for a
   * wildcard address.
   */
  advertiseHost?: string;
  /** Bearer token clients must send; random when not given. */
  token?: string;
  /** Seed of the RNG behind names, jitter and fault rolls. */
  seed?: number;
  /** Watch events kept for resume; older resourceVersions get 410 Expired. */
  historySize?: number;
  behaviour?: Partial<BehaviourConfig>;
  /** false: API, store and garbage collector only; no scheduler, kubelet or workload controllers. */
  controllers?: boolean;
  watchTimeoutSeconds?: number;
  bookmarkIntervalMs?: number;
  /** Namespaces created at start besides default, kube-system, kube-public and kube-node-lease. */
  namespaces?: string[];
  /**
   * The Kubernetes version played, `1.<minor>` (default 1.30): what /version and the nodes say, and the
   * validation that changed between versions (env var names, docs/simulator.md).
   */
  kubernetesVersion?: string;
  /**
   * The loopback range pod IPs come from, `127.R.0.0/16` (R 1..255); start fails when another simulator
   * holds it. Default: env KUBESIM_POD_RANGE, else a free range among 127.2 … 127.254 (pod-range.ts).
   */
  podRange?: string;
  /**
   * Running containers answer HTTP on their declared ports at the pod's IP (default true); false: pods
   * get IPs, nothing listens (e.g. for very many pods).
   */
  servePods?: boolean;
}

/** `1.30` (or `v1.30`, `1.30.2`) → 30; anything else is refused, naming it. */
export function minorOf(version: string): number {
  const m = /^v?1\.(\d{1,3})(\.\d+)?$/.exec(version);
  if (!m?.[1])
    throw new Error(`a Kubernetes version is 1.<minor> (e.g. 1.30), got ${JSON.stringify(version)}`);
  return Number(m[1]);
}

export interface Simulator {
  /** https:// — what the kubeconfig names: kubectl (client-go) only sends a bearer token over TLS. */
  readonly url: string;
  /** http:// on the same port, for in-process clients that need no TLS (the server tells them apart). */
  readonly httpUrl: string;
  readonly port: number;
  readonly token: string;
  readonly store: Store;
  readonly faults: Faults;
  readonly controllers: Controllers | undefined;
  /** Connections accepted since start, by protocol (a keep-alive client opens few). */
  readonly connectionsAccepted: { readonly tls: number; readonly plain: number };
  /** `127.R.0.0/16`, the pods' addresses; undefined without controllers (no kubelet, no pod IPs). */
  readonly podRange: string | undefined;
  /** Whether running containers answer HTTP on their ports. */
  readonly servePods: boolean;
  kubeconfig(namespace?: string): string;
  writeKubeconfig(file: string, namespace?: string): Promise<void>;
  close(): Promise<void>;
}

const WILDCARDS = new Set(['0.0.0.0', '::', '[::]']);

/** An IPv6 address goes in brackets in a URL. */
function urlHost(host: string): string {
  return host.includes(':') && !host.startsWith('[') ? `[${host}]` : host;
}

/** The pod range asked for: the option, else KUBESIM_POD_RANGE; validated (a bad one names its source). */
function wantedPodRange(options: SimulatorOptions): string | undefined {
  if (options.podRange !== undefined) {
    parsePodRange(options.podRange);
    return options.podRange;
  }
  const env = process.env[POD_RANGE_ENV];
  if (env === undefined || env.trim() === '') return undefined;
  try {
    parsePodRange(env);
  } catch (e) {
    throw new Error(`${POD_RANGE_ENV}: ${e instanceof Error ? e.message : String(e)}`, { cause: e });
  }
  return env;
}

export async function startSimulator(options: SimulatorOptions = {}): Promise<Simulator> {
  const withControllers = options.controllers !== false;
  const wanted = wantedPodRange(options);
  // Without controllers no kubelet hands out pod IPs: no range to claim.
  const claim: PodRangeClaim | undefined = withControllers ? await claimPodRange(wanted) : undefined;
  try {
    return await start(options, claim);
  } catch (e) {
    await claim?.release();
    throw e;
  }
}

async function start(options: SimulatorOptions, claim: PodRangeClaim | undefined): Promise<Simulator> {
  const servePods = options.servePods ?? true;
  const random = seededRandom(options.seed ?? Date.now());
  const registry = new ResourceRegistry();
  const store = new Store(registry, {
    random,
    ...(options.kubernetesVersion !== undefined ? { minorVersion: minorOf(options.kubernetesVersion) } : {}),
    ...(options.historySize ? { historySize: options.historySize } : {}),
  });
  const nsType = registry.get('', 'namespaces');
  for (const name of [
    'default',
    'kube-system',
    'kube-public',
    'kube-node-lease',
    ...(options.namespaces ?? []),
  ]) {
    if (!store.get(nsType, undefined, name)) {
      store.create(nsType, { apiVersion: 'v1', kind: 'Namespace', metadata: { name } } as never);
    }
  }
  const gc = new GarbageCollector(store);
  const behaviour: BehaviourConfig = {
    ...DEFAULT_BEHAVIOUR,
    ...options.behaviour,
    nodes: { ...DEFAULT_BEHAVIOUR.nodes, ...options.behaviour?.nodes },
  };
  const controllers = claim
    ? startControllers(store, behaviour, random, { podRange: claim, servePods })
    : undefined;
  const faults = new Faults(random);
  const token = options.token ?? randomBytes(16).toString('hex');
  const api = new ApiServer({
    store,
    faults,
    tokens: new Set([token]),
    random,
    ...(controllers ? { logs: (r) => controllers.logs(r), writeLog: (r) => controllers.writeLog(r) } : {}),
    ...(options.watchTimeoutSeconds !== undefined
      ? { watchTimeoutSeconds: options.watchTimeoutSeconds }
      : {}),
    ...(options.bookmarkIntervalMs !== undefined ? { bookmarkIntervalMs: options.bookmarkIntervalMs } : {}),
  });
  const host = options.host ?? '127.0.0.1';
  let port: number;
  try {
    port = await api.listen(options.port ?? 0, host);
  } catch (e) {
    await controllers?.stop();
    gc.stop();
    throw e;
  }
  const named = urlHost(options.advertiseHost ?? (WILDCARDS.has(host) ? '127.0.0.1' : host));
  const url = `https://${named}:${port}`;
  const httpUrl = `http://${named}:${port}`;
  return {
    url,
    httpUrl,
    port,
    token,
    store,
    faults,
    controllers,
    connectionsAccepted: api.connectionsAccepted,
    podRange: claim?.cidr,
    servePods,
    kubeconfig: (namespace) => kubeconfigYaml(url, token, namespace),
    // Written aside and renamed: a client polling for the file (compose's workers) never reads half of it.
    writeKubeconfig: async (file, namespace) => {
      await writeFile(`${file}.tmp`, kubeconfigYaml(url, token, namespace), { mode: 0o600 });
      await rename(`${file}.tmp`, file);
    },
    close: async () => {
      await controllers?.stop();
      gc.stop();
      await api.close();
      await claim?.release();
    },
  };
}

/**
 * One line for a simulator's start output: how to reach its pods (`pods answer HTTP at their IP (range
 * 127.R.0.0/16): curl http://<podIP>:8080/`), or that they get IPs but do not answer; undefined without
 * controllers (no pods run).
 */
export function podServingHint(sim: Pick<Simulator, 'podRange' | 'servePods'>): string | undefined {
  if (!sim.podRange) return undefined;
  return sim.servePods
    ? `pods answer HTTP at their IP (range ${sim.podRange}): curl http://<podIP>:8080/ (IPs: kubectl get pods -o wide)`
    : `pods get IPs from ${sim.podRange}; serving is off: nothing answers at them`;
}

export { StatusError, errors } from './errors.js';
export type { BehaviourConfig, NodeShape } from './behaviour.js';
export {
  CRASH_IMAGE_PREFIX,
  DEFAULT_BEHAVIOUR,
  FAST_BEHAVIOUR,
  SIM_ENV,
  PULL_ERROR_IMAGE_PREFIX,
} from './behaviour.js';
export type { FaultConfig, Verb } from './faults.js';
export { Faults } from './faults.js';
export { POD_RANGE_CLAIM_PORT, POD_RANGE_ENV, parsePodRange } from './pod-range.js';
export type { PodAnswer } from './controllers/pod-http.js';
export { Store } from './store.js';
export { ResourceRegistry } from './resources.js';
export type { KubeObject, ObjectMeta } from './types.js';
