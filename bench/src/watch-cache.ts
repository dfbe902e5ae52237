/**
 * Issue 15's figures (`npm run bench -- --only=watch`): the service watching the cluster instead of
 * listing it, at N apps, on the simulated cluster or, with `--kubeconfig <file>`, on a real API server.
 *
 * Per cluster and size: a fresh cluster (or namespace) and Redis prefix, N LRPs recorded and converged
 * (a Deployment at its record's generation and one Running pod each), then the API and the workers
 * (`--workers`, default 2) as production starts them, each worker talking to the cluster through its own
 * counting proxy (kube-proxy.ts). The bench plays the controllers and the kubelet itself (the simulated
 * cluster runs without them; a real one should be started with `--api-only`), so what is timed is the
 * service's reaction to a change, not a controller's. Measured:
 * - the first list applied (the cache writer's own log line) against a bare paged list of the same
 *   collections through the same adapter and proxy, in a process of its own, before and after;
 * - over an idle window (`--window-s`, resyncs every `--resync-s` inside it): the LIST requests per kind,
 *   extrapolated to an hour, and on a real server kube-apiserver's and etcd's CPU against the same
 *   window with the service stopped, before and after;
 * - the leader's peak RSS (/proc VmRSS), against a worker that does not hold the Lease;
 * - freshness, `--repeat` times each: a pod deleted and replaced until /instances shows the replacement
 *   running; a crash (restartCount raised on the pod's status) until CC gets its report; a task's Job
 *   finished (its status) until its completion callback arrives. Each against a bare watch of the same
 *   objects opened by the bench through the same kind of proxy: the floor any watcher has.
 */
import { spawn, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { Redis } from 'ioredis';
import { KubeConfig } from '@kubernetes/client-node';
import { desireLrpSchema, toDesiredLrp } from '@opi/contract';
import type { DesiredLrp } from '@opi/domain';
import { ClientNodeKubernetes, type WatchEvent, type WatchHandle, loadKubeConfig } from '@opi/kube';
import { startSimulator } from '@opi/kube-sim';
import { StateStore } from '@opi/state';
import { taskJobName } from '@opi/translation';
import { deploymentAt, podBody, podName, runningStatus, seconds, storeLrp } from './app-objects.js';
import { desireBody, uuid } from './bodies.js';
import { type CcSink, startCcSink } from './cc-sink.js';
import {
  type Child,
  REDIS_URL,
  type Row,
  WORKER_NODE_ARGS,
  apiScript,
  cpuSeconds,
  deathOf,
  deletePrefix,
  ended,
  log,
  logLines,
  percentile,
  repo,
  rssBytes,
  serviceEnv,
  sleep,
  startChild,
  stopChild,
  workerScript,
} from './common.js';
import {
  type Counts,
  type CountingProxy,
  type Tally,
  countsBetween,
  describeCounts,
  requestsOf,
  startCountingProxy,
} from './kube-proxy.js';

export interface WatchCacheOptions {
  /** `--apps 2000` or `--apps 2000,10000`: apps per run, one run per size. */
  sizes: number[];
  /** `--kubeconfig <file>`: a real API server instead of the simulated cluster. */
  kubeconfig: string | undefined;
  /** `--with-sim`: with --kubeconfig, the simulated cluster too, in the same run. */
  withSim: boolean;
  /** `--window-s`: the idle window over which requests (and a real server's CPU) are counted. */
  windowSeconds: number;
  /** `--repeat`: samples of each freshness figure. */
  repeat: number;
  /** `--workers`: worker processes (one holds the Lease). */
  workers: number;
  /** `--resync-s`: OPI_RESYNC_INTERVAL_MS during the run, so that resyncs fall inside the window. */
  resyncSeconds: number;
}

function flagValue(argv: readonly string[], name: string): string | undefined {
  const i = argv.indexOf(`--${name}`);
  if (i >= 0) return argv[i + 1];
  return argv.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3);
}

export function watchCacheOptions(argv: readonly string[], quick: boolean): WatchCacheOptions {
  const num = (name: string, fallback: number): number => {
    const v = flagValue(argv, name);
    if (v === undefined) return fallback;
    const n = Number(v);
    if (!Number.isInteger(n) || n <= 0) throw new Error(`--${name} wants a positive whole number, not ${v}`);
    return n;
  };
  const apps = flagValue(argv, 'apps');
  const sizes = apps ? apps.split(',').map(Number) : [quick ? 1000 : 10_000];
  if (sizes.some((n) => !Number.isInteger(n) || n < 100))
    throw new Error(`--apps wants sizes ≥ 100, not ${apps}`);
  return {
    sizes,
    kubeconfig: flagValue(argv, 'kubeconfig'),
    withSim: argv.includes('--with-sim'),
    windowSeconds: num('window-s', quick ? 30 : 180),
    repeat: num('repeat', quick ? 15 : 50),
    workers: num('workers', 2),
    resyncSeconds: num('resync-s', 60),
  };
}

// ---- the clusters ----------------------------------------------------------------------------------

/** JSON requests through a counting proxy, which adds the credentials. */
class Rest {
  constructor(readonly base: string) {}

  async send<T = Record<string, unknown>>(
    method: string,
    path: string,
    body?: unknown,
    contentType = 'application/json',
  ): Promise<T> {
    const res = await fetch(`${this.base}${path}`, {
      method,
      ...(body === undefined ? {} : { headers: { 'content-type': contentType }, body: JSON.stringify(body) }),
    });
    const text = await res.text();
    if (!res.ok) throw new Error(`${method} ${path}: ${res.status} ${text.slice(0, 300)}`);
    return (text ? JSON.parse(text) : {}) as T;
  }

  /** A status merge patch (the kubelet's and the controllers' write). */
  status(path: string, status: unknown): Promise<unknown> {
    return this.send('PATCH', `${path}/status`, { status }, 'application/merge-patch+json');
  }
}

interface ServerPids {
  apiserver: number;
  etcd: number | undefined;
}

/** One LRP as seeded: its record's generation, its pod's name and its other pods' names. */
interface Seeded {
  lrp: DesiredLrp;
  generation: number;
  pod: string;
  others: string[];
}

/**
 * Every tenth LRP runs three instances, so N apps run 1.2 N pods (the issue's 100,000 apps and
 * 120,000 pods); freshness is timed on the single-instance ones.
 */
const instancesOf = (n: number): number => (n % 10 === 0 ? 3 : 1);
const seededPods = (seeded: Seeded[]): number => seeded.reduce((n, s) => n + 1 + s.others.length, 0);

interface Target {
  kind: 'sim' | 'real';
  label: string;
  namespace: string;
  /** The bench's own requests (seeding on a real server, the changes, the bare watch and list). */
  admin: CountingProxy;
  rest: Rest;
  /** Where the workers' proxies forward to, and how. */
  upstream: { kc: KubeConfig; plainUrl: string | undefined };
  seed(items: Seeded[]): Promise<void>;
  /** kube-apiserver and etcd, for their CPU; undefined on the simulated cluster (it is this process). */
  serverPids: ServerPids | undefined;
  close(): Promise<void>;
}

async function simTarget(namespace: string): Promise<Target> {
  const sim = await startSimulator({ controllers: false, namespaces: [namespace], seed: 15 });
  const kc = new KubeConfig();
  kc.loadFromString(sim.kubeconfig());
  const admin = await startCountingProxy(kc, sim.httpUrl);
  return {
    kind: 'sim',
    label: 'simulated',
    namespace,
    admin,
    rest: new Rest(admin.url),
    upstream: { kc, plainUrl: sim.httpUrl },
    seed: async (items) => {
      const startedAt = seconds(new Date());
      for (const [i, s] of items.entries()) {
        storeLrp(sim, s.lrp, s.generation, [s.pod, ...s.others], namespace, startedAt);
        if (i % 500 === 499) await new Promise((r) => setImmediate(r));
      }
    },
    serverPids: undefined,
    close: async () => {
      await admin.close();
      await sim.close();
    },
  };
}

function cmdline(pid: number): string[] {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0');
  } catch {
    return [];
  }
}

function pgrep(name: string): number[] {
  const r = spawnSync('pgrep', ['-x', name], { encoding: 'utf8' });
  return r.stdout
    .split('\n')
    .filter(Boolean)
    .map(Number)
    .filter((n) => Number.isInteger(n) && n > 0);
}

/** A flag's value in a command line, given as `--flag value` or `--flag=value`. */
function argOf(args: string[], flag: string): string | undefined {
  const i = args.indexOf(flag);
  if (i >= 0) return args[i + 1];
  return args.find((a) => a.startsWith(`${flag}=`))?.slice(flag.length + 1);
}

/**
 * The kube-apiserver serving `port` on this machine (by its `--secure-port`) and the etcd it names in
 * `--etcd-servers` (by its `--listen-client-urls`); undefined when not found (a remote server).
 */
function findServerPids(port: number): ServerPids | undefined {
  const apiservers = pgrep('kube-apiserver');
  const apiserver =
    apiservers.find((pid) => Number(argOf(cmdline(pid), '--secure-port') ?? 6443) === port) ??
    (apiservers.length === 1 ? apiservers[0] : undefined);
  if (apiserver === undefined) return undefined;
  const etcdUrl = argOf(cmdline(apiserver), '--etcd-servers')?.split(',')[0];
  const etcdPort = etcdUrl ? new URL(etcdUrl).port : undefined;
  const etcd = pgrep('etcd').find((pid) =>
    (argOf(cmdline(pid), '--listen-client-urls') ?? '').split(',').some((u) => u.endsWith(`:${etcdPort}`)),
  );
  return { apiserver, etcd };
}

/** Runs `work` on every item, `lanes` at a time. */
async function inLanes<T>(items: T[], lanes: number, work: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  const lane = async (): Promise<void> => {
    while (next < items.length) {
      const item = items[next++];
      if (item !== undefined) await work(item);
    }
  };
  await Promise.all(Array.from({ length: lanes }, lane));
}

async function realTarget(file: string, namespace: string): Promise<Target> {
  const kc = new KubeConfig();
  kc.loadFromFile(file);
  const server = kc.getCurrentCluster()?.server;
  if (!server) throw new Error(`${file} names no current cluster`);
  const admin = await startCountingProxy(kc);
  const rest = new Rest(admin.url);
  await rest.send('POST', '/api/v1/namespaces', {
    apiVersion: 'v1',
    kind: 'Namespace',
    metadata: { name: namespace },
  });
  const ns = `/namespaces/${namespace}`;
  const url = new URL(server);
  return {
    kind: 'real',
    label: `real (${url.host})`,
    namespace,
    admin,
    rest,
    upstream: { kc, plainUrl: undefined },
    seed: async (items) => {
      const startedAt = seconds(new Date());
      let done = 0;
      await inLanes(items, 32, async (s) => {
        await rest.send('POST', `/apis/apps/v1${ns}/deployments`, deploymentAt(s.lrp, s.generation));
        for (const name of [s.pod, ...s.others]) {
          await rest.send('POST', `/api/v1${ns}/pods`, podBody(s.lrp, name, namespace));
          await rest.status(`/api/v1${ns}/pods/${name}`, runningStatus(s.lrp, startedAt));
        }
        if (++done % 1000 === 0) log(`  ${done} of ${items.length} seeded`);
      });
      // Controllers would add ReplicaSets and pods of their own to what the bench plays.
      const rs = await rest.send<{ items: unknown[] }>('GET', `/apis/apps/v1${ns}/replicasets?limit=1`);
      if (rs.items.length > 0) {
        throw new Error(
          'a controller-manager runs against this server: the bench plays the controllers itself; ' +
            'start the server with ./start.sh --api-only',
        );
      }
    },
    serverPids: findServerPids(Number(url.port || 443)),
    close: async () => {
      // Pods at once (no kubelet would finish a graceful deletion); what the service made too.
      const collections = [
        `/apis/apps/v1${ns}/deployments`,
        `/api/v1${ns}/pods?gracePeriodSeconds=0`,
        `/apis/batch/v1${ns}/jobs?propagationPolicy=Background`,
        `/apis/coordination.k8s.io/v1${ns}/leases`,
        `/api/v1${ns}/secrets`,
        `/api/v1${ns}/events`,
      ];
      for (const c of collections) {
        await rest.send('DELETE', c).catch((err: unknown) => {
          log(`cleanup: ${err instanceof Error ? err.message : String(err)}`);
        });
      }
      await rest.send('DELETE', `/api/v1/namespaces/${namespace}`).catch(() => undefined);
      await admin.close();
    },
  };
}

// ---- watching what the bench changed ---------------------------------------------------------------

type AnyObject = {
  metadata: { name: string; resourceVersion?: string };
  status?: Record<string, unknown>;
};

/**
 * The baseline of every freshness figure: a bare watch (the adapter's, as the reflectors use) of pods
 * and Jobs in the namespace, through a proxy as the workers' are; `expect` resolves when an event that
 * `match` accepts arrives (performance.now()), or NaN after `timeoutMs`.
 */
class BareWatch {
  private readonly waiters = new Set<{
    match: (o: AnyObject, type: string) => boolean;
    done(at: number): void;
  }>();
  private readonly handles = new Map<string, WatchHandle>();
  private closed = false;

  private constructor(
    private readonly kube: ClientNodeKubernetes,
    private readonly namespace: string,
  ) {}

  static async start(kubeconfigYaml: string, namespace: string): Promise<BareWatch> {
    const kube = new ClientNodeKubernetes(loadKubeConfig({ kubeconfigYaml }));
    // The collection's current version from a list that matches nothing: the watch starts from now.
    const { resourceVersion } = await kube.listPods(namespace, 'bench-matches=nothing');
    const w = new BareWatch(kube, namespace);
    w.open('pods', resourceVersion);
    w.open('jobs', resourceVersion);
    return w;
  }

  private open(resource: 'pods' | 'jobs', from: string): void {
    let last = from;
    const onEvent = (e: WatchEvent<unknown>): void => {
      const at = performance.now();
      if (e.type === 'ERROR') return;
      const o = e.object as AnyObject;
      if (o.metadata.resourceVersion) last = o.metadata.resourceVersion;
      if (e.type === 'BOOKMARK') return;
      for (const w of this.waiters) {
        if (w.match(o, e.type)) {
          this.waiters.delete(w);
          w.done(at);
        }
      }
    };
    const handle = this.kube.watch(
      resource,
      this.namespace,
      { resourceVersion: from, timeoutSeconds: 3600, allowWatchBookmarks: true },
      onEvent,
    );
    this.handles.set(resource, handle);
    // Re-opened from the last version seen should the server end it.
    handle.done
      .catch((err: unknown) => {
        log(`bare watch of ${resource} ended: ${err instanceof Error ? err.message : String(err)}`);
      })
      .finally(() => {
        if (!this.closed) this.open(resource, last);
      });
  }

  expect(match: (o: AnyObject, type: string) => boolean, timeoutMs: number): Promise<number> {
    return new Promise((resolve) => {
      const w = {
        match,
        done: (at: number) => {
          clearTimeout(timer);
          resolve(at);
        },
      };
      const timer = setTimeout(() => {
        this.waiters.delete(w);
        resolve(NaN);
      }, timeoutMs);
      this.waiters.add(w);
    });
  }

  close(): void {
    this.closed = true;
    for (const h of this.handles.values()) h.stop();
    this.kube.close();
  }
}

// ---- the service -----------------------------------------------------------------------------------

interface KindStatus {
  synced?: boolean;
  objects?: number;
  holder?: string;
}

/** The leader's pid from the holder identity its heartbeat writes (`<host>-<pid>-<hex>`). */
function holderPid(holder: string | undefined): number | undefined {
  const m = /-(\d+)-[0-9a-f]+$/.exec(holder ?? '');
  return m?.[1] ? Number(m[1]) : undefined;
}

/** Waits until the cache writer reports every kind listed with `size` Deployments and their pods; its Child. */
async function awaitFirstList(
  state: StateStore,
  workers: Child[],
  size: number,
  podCount: number,
  alive: () => void,
): Promise<Child> {
  const deadline = Date.now() + 30 * 60_000;
  for (;;) {
    alive();
    const raw = await state.watchStatus();
    const kinds = KINDS.map((k) => JSON.parse(raw[k] ?? '{}') as KindStatus);
    const [d, s, p, j] = kinds;
    const meta = await state.syncMeta();
    if (
      d?.synced &&
      s?.synced &&
      p?.synced &&
      j?.synced &&
      d.objects === size &&
      p.objects === podCount &&
      meta?.deployments === size
    ) {
      const pid = holderPid(d.holder);
      const leader = workers.find((w) => w.pid === pid);
      if (!leader) throw new Error(`the cache writer ${d.holder ?? '?'} is none of the bench's workers`);
      return leader;
    }
    if (Date.now() > deadline) throw new Error(`the cache did not list ${size} apps within 30 minutes`);
    await sleep(100);
  }
}

/** Polls `check` every `everyMs` until it holds: performance.now() when it did, or NaN after `timeoutMs`. */
async function pollUntil(check: () => Promise<boolean>, timeoutMs: number, everyMs = 10): Promise<number> {
  const deadline = performance.now() + timeoutMs;
  while (performance.now() < deadline) {
    if (await check()) return performance.now();
    await sleep(everyMs);
  }
  return NaN;
}

/** The bare list (bare-list.ts) in a process of its own, with the worker's Node flags. */
async function bareList(kubeconfig: string, namespace: string): Promise<number> {
  const proc = spawn(process.execPath, [...WORKER_NODE_ARGS, join(repo, 'bench/dist/bare-list.js')], {
    env: { PATH: process.env['PATH'] ?? '', KUBECONFIG: kubeconfig, BENCH_NAMESPACE: namespace },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  for await (const line of createInterface({ input: proc.stdout })) {
    const r = JSON.parse(line) as { ms: number; deployments: number; pods: number };
    log(`bare paged list: ${r.deployments} Deployments, ${r.pods} pods in ${Math.round(r.ms)} ms`);
    return r.ms;
  }
  throw new Error(`bare-list exited with ${String(proc.exitCode ?? proc.signalCode)}`);
}

interface RssSampler {
  /** The peak since the start. */
  peak(pid: number): number;
  /** The peak since the previous phase ended (or the start); a new phase begins. */
  endPhase(pid: number): number;
  stop(): void;
}

/** Peak RSS per pid, sampled every 200 ms, overall and per phase. */
function rssSampler(pids: () => number[]): RssSampler {
  const peaks = new Map<number, number>();
  const phase = new Map<number, number>();
  const sample = (): void => {
    for (const pid of pids()) {
      const rss = rssBytes(pid);
      peaks.set(pid, Math.max(peaks.get(pid) ?? 0, rss));
      phase.set(pid, Math.max(phase.get(pid) ?? 0, rss));
    }
  };
  sample();
  const timer = setInterval(sample, 200);
  return {
    peak: (pid) => {
      sample();
      return peaks.get(pid) ?? NaN;
    },
    endPhase: (pid) => {
      sample();
      const p = phase.get(pid) ?? NaN;
      phase.delete(pid);
      return p;
    },
    stop: () => {
      clearInterval(timer);
    },
  };
}

/** kube-apiserver's and etcd's CPU seconds so far. */
function serverCpu(p: ServerPids): number {
  return cpuSeconds(p.apiserver) + (p.etcd !== undefined ? cpuSeconds(p.etcd) : 0);
}

/** Their CPU over `seconds` of wall time, in % of one core. */
async function serverCpuOver(p: ServerPids, seconds: number): Promise<number> {
  const c0 = serverCpu(p);
  const t0 = performance.now();
  await sleep(seconds * 1000);
  return ((serverCpu(p) - c0) / ((performance.now() - t0) / 1000)) * 100;
}

// ---- one run ---------------------------------------------------------------------------------------

interface Samples {
  ours: number[];
  bare: number[];
}

interface SizeResult {
  cluster: string;
  apps: number;
  pods: number;
  firstListMs: number;
  bareListMs: number[];
  leaderPeakRssBytes: number;
  leaderFirstListRssBytes: number;
  /** The leader's peak RSS in each phase after the first list. */
  leaderRssByPhase: Record<string, number>;
  otherWorkerRssBytes: number;
  windowSeconds: number;
  /** Requests in the idle window; undefined when it was not reached (a worker died). */
  windowCounts: Record<string, number> | undefined;
  totalCounts: Record<string, number>;
  perWorkerWindow: Record<string, number>[];
  cpu?: { alonePercent: number[]; idlePercent: number };
  replaced: Samples;
  crashed: Samples;
  task: Samples;
  /** Why the run ended early, when a worker died. */
  failure?: string;
}

const TIMEOUT_MS = 20_000;
/** Task bodies as CC sends them (docs/api.md), calling back to the bench. */
function taskBody(callback: string): Record<string, unknown> {
  return {
    name: 'bench-task',
    app_guid: 'app-1',
    app_name: 'app',
    org_guid: 'org-1',
    org_name: 'org',
    space_guid: 'space-1',
    space_name: 'dev',
    completion_callback: callback,
    environment: [],
    lifecycle: { docker_lifecycle: { image: 'registry.example/task:1', command: ['/bin/true'] } },
    memory_mb: 64,
    disk_mb: 128,
    cpu_weight: 1,
  };
}

/** Requests by `VERB resource` (a watch that only streamed in the window made no request there). */
const countsRecord = (c: Counts): Record<string, number> =>
  Object.fromEntries([...c].filter(([, v]) => v.requests > 0).map(([k, v]) => [k, v.requests]));

function sumCounts(all: Counts[]): Counts {
  const out: Counts = new Map();
  for (const c of all) {
    for (const [k, v] of c) {
      const t = out.get(k) ?? { requests: 0, bytes: 0 };
      out.set(k, { requests: t.requests + v.requests, bytes: t.bytes + v.bytes });
    }
  }
  return out;
}

/** A worker process ended during the run: what was measured until then is reported, the rest is not. */
class WorkerDied extends Error {}

async function runSize(
  o: WatchCacheOptions,
  kind: 'sim' | 'real',
  size: number,
  results: string,
): Promise<SizeResult> {
  const namespace = `opi-bench-${randomBytes(3).toString('hex')}`;
  const prefix = `bench-wc-${randomBytes(4).toString('hex')}`;
  const target =
    kind === 'sim' ? await simTarget(namespace) : await realTarget(o.kubeconfig ?? '', namespace);
  const redis = new Redis(REDIS_URL);
  const state = new StateStore(redis, prefix);
  const children: Child[] = [];
  const proxies: CountingProxy[] = [];
  let sink: CcSink | undefined;
  let watch: BareWatch | undefined;
  let sampler: RssSampler | undefined;
  const tag = `${target.label}, ${size} apps`;
  const r: SizeResult = {
    cluster: target.label,
    apps: size,
    pods: NaN,
    firstListMs: NaN,
    bareListMs: [],
    leaderPeakRssBytes: NaN,
    leaderFirstListRssBytes: NaN,
    leaderRssByPhase: {},
    otherWorkerRssBytes: NaN,
    windowSeconds: o.windowSeconds,
    windowCounts: undefined,
    totalCounts: {},
    perWorkerWindow: [],
    replaced: { ours: [], bare: [] },
    crashed: { ours: [], bare: [] },
    task: { ours: [], bare: [] },
  };
  try {
    // ---- seeding: records in Redis, a Deployment and a Running pod per LRP ----
    log(`[${tag}] seeding`);
    const seeded: Seeded[] = [];
    for (let i = 0; i < size; i += 500) {
      const batch: DesiredLrp[] = [];
      for (let n = i; n < Math.min(size, i + 500); n++) {
        const body = { ...desireBody(uuid(n, 'wc'), 'v1'), instances: instancesOf(n) };
        batch.push(
          toDesiredLrp(desireLrpSchema.parse(body), { namespace, dropletRegistry: 'registry.example' }),
        );
      }
      await Promise.all(batch.map((lrp) => state.adopt(lrp)));
      const records = await Promise.all(batch.map((lrp) => state.get(lrp.processGuid)));
      batch.forEach((lrp, j) => {
        const others = Array.from({ length: lrp.instances - 1 }, (_, k) => podName(lrp, k + 1));
        seeded.push({ lrp, generation: records[j]?.generation ?? 0, pod: podName(lrp, 0), others });
      });
    }
    r.pods = seededPods(seeded);
    const seedStart = performance.now();
    await target.seed(seeded);
    log(`[${tag}] seeded in ${Math.round(performance.now() - seedStart)} ms`);

    const adminKubeconfig = join(results, `watch-${kind}-admin.kubeconfig`);
    await writeFile(adminKubeconfig, target.admin.kubeconfig(namespace));
    const server = target.serverPids;
    const alone: number[] = [];
    if (server) {
      log(`[${tag}] kube-apiserver ${server.apiserver}, etcd ${server.etcd ?? '?'}: CPU alone`);
      await sleep(10_000);
      alone.push(await serverCpuOver(server, o.windowSeconds));
    }
    r.bareListMs.push(await bareList(adminKubeconfig, namespace));

    // ---- the service ----
    sink = await startCcSink();
    const api = await startChild(
      apiScript,
      { ...serviceEnv(prefix, namespace), PORT: '0', HOST: '127.0.0.1' },
      join(results, `watch-${kind}-api.log`),
    );
    children.push(api);
    const workerEnv = {
      ...serviceEnv(prefix, namespace),
      OPI_METRICS_PORT: '0',
      CC_INTERNAL_URL: sink.url,
      OPI_RESYNC_INTERVAL_MS: String(o.resyncSeconds * 1000),
      // The bench's namespace only: a shared real server may hold other services' objects.
      OPI_SYNC_ALL_NAMESPACES: 'false',
    };
    const workers: Child[] = [];
    sampler = rssSampler(() => workers.map((w) => w.pid));
    const started = await Promise.allSettled(
      Array.from({ length: o.workers }, async (_, i) => {
        const proxy = await startCountingProxy(target.upstream.kc, target.upstream.plainUrl);
        proxies[i] = proxy;
        const file = join(results, `watch-${kind}-worker-${i}.kubeconfig`);
        await writeFile(file, proxy.kubeconfig(namespace));
        const w = await startChild(
          workerScript,
          { ...workerEnv, KUBECONFIG: file },
          join(results, `watch-${kind}-worker-${i}.log`),
          'workers started',
          WORKER_NODE_ARGS,
        );
        workers[i] = w;
        children.push(w);
        return w;
      }),
    );
    const failed = started.find((x) => x.status === 'rejected');
    if (failed) throw failed.reason;
    log(`[${tag}] API pid ${api.pid}, workers ${workers.map((w) => w.pid).join(', ')}`);
    const alive = (): void => {
      const dead = workers.find(ended);
      if (dead) throw new WorkerDied(`worker ${deathOf(dead)}`);
    };
    let leader: Child | undefined;
    try {
      leader = await awaitFirstList(state, workers, size, seededPods(seeded), alive);
      const l = leader;
      r.leaderFirstListRssBytes = sampler.endPhase(l.pid);
      // The log line may still sit in the logger's buffer for a moment.
      await pollUntil(
        () => Promise.resolve(logLines(l.logFile, 'cluster listed, cache written').length > 0),
        5000,
        50,
      );
      const listed = logLines(l.logFile, 'cluster listed, cache written')[0]?.['ms'];
      r.firstListMs = typeof listed === 'number' ? listed : NaN;
      log(`[${tag}] first list applied in ${Math.round(r.firstListMs)} ms by worker ${l.pid}`);
      // The first reconcile runs right after the first list; the idle window starts after it.
      await pollUntil(
        () => {
          alive();
          return Promise.resolve(logLines(l.logFile, 'sync done').length > 0);
        },
        600_000,
        200,
      );
      r.leaderRssByPhase['first reconcile'] = sampler.endPhase(l.pid);
      await sleep(kind === 'real' ? 20_000 : 5000);

      // ---- idle window ----
      log(`[${tag}] idle window of ${o.windowSeconds} s`);
      const before = proxies.map((p) => p.counts());
      const c0 = server ? serverCpu(server) : NaN;
      const t0 = performance.now();
      for (let s = 0; s < o.windowSeconds; s++) {
        await sleep(1000);
        alive();
      }
      const cpuIdle = server ? ((serverCpu(server) - c0) / ((performance.now() - t0) / 1000)) * 100 : NaN;
      const after = proxies.map((p) => p.counts());
      const perWorker = after.map((a, i) => countsBetween(before[i] ?? new Map<string, Tally>(), a));
      const windowCounts = sumCounts(perWorker);
      r.windowCounts = countsRecord(windowCounts);
      r.perWorkerWindow = perWorker.map(countsRecord);
      if (server) r.cpu = { alonePercent: alone, idlePercent: cpuIdle };
      r.leaderRssByPhase['idle window'] = sampler.endPhase(l.pid);
      log(`[${tag}] window: ${describeCounts(windowCounts) || 'no requests'}`);

      // ---- freshness ----
      watch = await BareWatch.start(target.admin.kubeconfig(namespace), namespace);
      await freshness({
        o,
        tag,
        target,
        seeded,
        api: `http://127.0.0.1:${api.port}`,
        sink,
        watch,
        alive,
        r,
      });
      r.leaderRssByPhase['freshness'] = sampler.endPhase(l.pid);
    } catch (e) {
      if (!(e instanceof WorkerDied)) throw e;
      r.failure = e.message;
      log(`[${tag}] ${e.message}`);
    }

    // ---- totals, memory, and the baselines again ----
    r.totalCounts = countsRecord(sumCounts(proxies.map((p) => p.counts())));
    if (leader) {
      r.leaderPeakRssBytes = sampler.peak(leader.pid);
      const others = workers.filter((w) => w !== leader).map((w) => sampler?.peak(w.pid) ?? NaN);
      if (others.length) r.otherWorkerRssBytes = Math.max(...others);
    }
    sampler.stop();
    watch?.close();
    watch = undefined;
    for (const c of children.splice(0)) await stopChild(c);
    r.bareListMs.push(await bareList(adminKubeconfig, namespace));
    if (server) {
      log(`[${tag}] CPU alone again`);
      await sleep(10_000);
      alone.push(await serverCpuOver(server, o.windowSeconds));
    }
    return r;
  } finally {
    sampler?.stop();
    watch?.close();
    for (const c of children) await stopChild(c);
    for (const p of proxies) await p.close();
    await sink?.close();
    await deletePrefix(redis, prefix);
    redis.disconnect();
    await target.close();
  }
}

/** The three freshness figures, `o.repeat` samples each, into `r`. */
async function freshness(c: {
  o: WatchCacheOptions;
  tag: string;
  target: Target;
  seeded: Seeded[];
  api: string;
  sink: CcSink;
  watch: BareWatch;
  alive: () => void;
  r: SizeResult;
}): Promise<void> {
  const { o, tag, target, seeded, api, sink, watch, alive, r } = c;
  const size = seeded.length;
  const namespace = target.namespace;
  const ns = `/namespaces/${namespace}`;
  const pick = (i: number, shift: number): Seeded => {
    const at = (Math.floor(((i + 0.5) * size) / o.repeat) + shift) % size;
    const s = seeded[instancesOf(at) === 1 ? at : (at + 1) % size];
    if (!s || s.others.length > 0) throw new Error('no such single-instance app');
    return s;
  };

  log(`[${tag}] pod deleted → replacement in /instances, ${o.repeat} times`);
  for (let i = 0; i < o.repeat; i++) {
    alive();
    const s = pick(i, 0);
    const name = `${s.pod.replace(/-r\d+$/, '')}-r${i}`;
    // A start time of its own, so the replacement's `since` tells it from the pod it replaced.
    const startedAt = seconds(new Date(Date.UTC(2001, 0, 1) + i * 1000));
    const sinceMs = Date.parse(startedAt);
    const bare = watch.expect(
      (p, type) =>
        type !== 'DELETED' &&
        p.metadata.name === name &&
        (p.status?.['phase'] as string | undefined) === 'Running',
      TIMEOUT_MS,
    );
    const t0 = performance.now();
    await target.rest.send('DELETE', `/api/v1${ns}/pods/${s.pod}?gracePeriodSeconds=0`);
    await target.rest.send('POST', `/api/v1${ns}/pods`, podBody(s.lrp, name, namespace));
    await target.rest.status(`/api/v1${ns}/pods/${name}`, runningStatus(s.lrp, startedAt));
    s.pod = name;
    const seen = await pollUntil(async () => {
      const res = await fetch(`${api}/apps/${s.lrp.guid}/${s.lrp.version}/instances`);
      const body = (await res.json()) as { instances?: { since?: number; state?: string }[] };
      const inst = body.instances ?? [];
      return (
        inst.length === 1 &&
        inst[0]?.state === 'RUNNING' &&
        Math.round((inst[0].since ?? 0) / 1e6) === sinceMs
      );
    }, TIMEOUT_MS);
    r.replaced.ours.push(seen - t0);
    r.replaced.bare.push((await bare) - t0);
    await sleep(100);
  }

  log(`[${tag}] crash → report at CC, ${o.repeat} times`);
  const shift = Math.max(1, Math.floor(size / (2 * o.repeat)));
  for (let i = 0; i < o.repeat; i++) {
    alive();
    const s = pick(i, shift);
    const pg = s.lrp.processGuid;
    const now = new Date();
    const finishedAt = seconds(now);
    const startedAt = seconds(new Date(now.getTime() - 60_000));
    const bare = watch.expect((p) => {
      const cs = p.status?.['containerStatuses'] as { restartCount?: number }[] | undefined;
      return p.metadata.name === s.pod && cs?.[0]?.restartCount === 1;
    }, TIMEOUT_MS);
    const report = sink.next(
      (a) =>
        a.path === `/internal/v4/apps/${pg}/crashed` &&
        (a.body as { crash_count?: number } | undefined)?.crash_count === 1,
      TIMEOUT_MS,
    );
    const t0 = performance.now();
    await target.rest.status(
      `/api/v1${ns}/pods/${s.pod}`,
      runningStatus(s.lrp, startedAt, { restarts: 1, finishedAt }),
    );
    r.crashed.ours.push(await report.then((a) => a.at - t0).catch(() => NaN));
    r.crashed.bare.push((await bare) - t0);
    await sleep(100);
  }

  log(`[${tag}] task's Job finished → callback, ${o.repeat} times`);
  for (let i = 0; i < o.repeat; i++) {
    alive();
    const guid = uuid(i, `t${randomBytes(3).toString('hex')}`);
    const job = taskJobName(guid);
    const created = watch.expect((j, type) => type === 'ADDED' && j.metadata.name === job, TIMEOUT_MS);
    const res = await fetch(`${api}/tasks/${guid}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(taskBody(`${sink.url}/internal/v4/tasks/${guid}/completed`)),
    });
    if (res.status !== 202) throw new Error(`POST /tasks answered ${res.status}: ${await res.text()}`);
    if (Number.isNaN(await created)) {
      r.task.ours.push(NaN);
      r.task.bare.push(NaN);
      continue;
    }
    const bare = watch.expect((j) => {
      const conds = j.status?.['conditions'] as { type?: string; status?: string }[] | undefined;
      return (
        j.metadata.name === job && (conds ?? []).some((x) => x.type === 'Complete' && x.status === 'True')
      );
    }, TIMEOUT_MS);
    const callback = sink.next((a) => a.path === `/internal/v4/tasks/${guid}/completed`, TIMEOUT_MS);
    const at = seconds(new Date());
    const t0 = performance.now();
    await target.rest.status(`/apis/batch/v1${ns}/jobs/${job}`, {
      startTime: at,
      completionTime: at,
      succeeded: 1,
      conditions: [{ type: 'Complete', status: 'True', lastProbeTime: at, lastTransitionTime: at }],
    });
    r.task.ours.push(await callback.then((a) => a.at - t0).catch(() => NaN));
    r.task.bare.push((await bare) - t0);
    await sleep(100);
  }
}

/** The kinds the cache writer watches (StatefulSets in either mode: an LRP keeps its kind). */
const KINDS = ['deployments', 'statefulsets', 'pods', 'jobs'] as const;

// ---- rows ------------------------------------------------------------------------------------------

function appsLabel(n: number): string {
  return n >= 1000 ? `${n / 1000}k apps` : `${n} apps`;
}

function rowsOf(r: SizeResult, o: WatchCacheOptions): Row[] {
  const size = `${r.cluster}, ${appsLabel(r.apps)}`;
  const rows: Row[] = [];
  const w = r.windowSeconds;
  const window = new Map(
    Object.entries(r.windowCounts ?? {}).map(([k, v]) => [k, { requests: v, bytes: 0 }]),
  );
  const total = new Map(Object.entries(r.totalCounts).map(([k, v]) => [k, { requests: v, bytes: 0 }]));
  const others = Object.entries(r.windowCounts ?? {})
    .filter(([k]) => !k.startsWith('LIST'))
    .map(([k, v]) => `${k} ${v}`)
    .join(', ');
  for (const kind of KINDS) {
    const lists = requestsOf(window, 'LIST', kind);
    // Not counted when a worker died before the window.
    const perHour = r.windowCounts ? (lists * 3600) / w : NaN;
    rows.push({
      scenario: 'watch: LIST requests while idle',
      size,
      metric: `${kind}, per hour`,
      ours: perHour,
      baseline: NaN,
      unit: '/h',
      ratio: NaN,
      ratioMeaning: '',
      target: '≤ 1/h',
      met: perHour <= 1,
      note:
        (r.windowCounts ? '' : 'not measured: a worker died before the idle window; ') +
        `${lists} in a ${w} s window × ${3600 / w}, ${o.workers} workers, resync every ${o.resyncSeconds} s; ` +
        `since the start ${requestsOf(total, 'LIST', kind)} lists + ${requestsOf(total, 'LIST_PAGE', kind)} further pages, ` +
        `${requestsOf(total, 'WATCH', kind)} watches; the 5 s sync listed each kind 720 times an hour` +
        (kind === 'jobs' ? `; the window's other requests: ${others || 'none'}` : ''),
    });
  }
  if (r.cpu) {
    const alone = r.cpu.alonePercent.reduce((a, b) => a + b, 0) / r.cpu.alonePercent.length;
    const ratio = r.cpu.idlePercent / alone;
    rows.push({
      scenario: 'watch: kube-apiserver + etcd CPU, service idle',
      size,
      metric: '% of a core',
      ours: r.cpu.idlePercent,
      baseline: alone,
      unit: '%',
      ratio,
      ratioMeaning: '× the cluster alone',
      target: '≤ 1.10× alone',
      met: ratio <= 1.1,
      note: `${w} s windows; alone before and after: ${r.cpu.alonePercent.map((x) => x.toFixed(2)).join(' %, ')} %`,
    });
  }
  // The mean of the runs before and after: with two, a median would be the faster one.
  const bare = r.bareListMs.reduce((a, b) => a + b, 0) / r.bareListMs.length;
  rows.push({
    scenario: 'watch: first list applied',
    size,
    metric: 'ms, list → cache written',
    ours: r.firstListMs,
    baseline: bare,
    unit: 'ms',
    ratio: r.firstListMs / bare,
    ratioMeaning: '× the bare paged list',
    target: '≤ 2× bare',
    met: r.firstListMs / bare <= 2,
    note: `bare list (3 collections at once, pages of 500, nothing kept) before and after: ${r.bareListMs.map((x) => Math.round(x)).join(', ')} ms`,
  });
  rows.push({
    scenario: 'watch: worker RSS (Lease holder)',
    size,
    metric: 'peak RSS',
    ours: r.leaderPeakRssBytes,
    baseline: r.otherWorkerRssBytes,
    unit: 'B',
    ratio: r.leaderPeakRssBytes / r.otherWorkerRssBytes,
    ratioMeaning: '× a worker without the Lease',
    target: '≤ 250 MB',
    // A worker that died (out of heap, at the shipped flags) did not stay within its memory either.
    met: r.leaderPeakRssBytes <= 250e6 && r.failure === undefined,
    note:
      `${r.pods} pods; peak ${(r.leaderFirstListRssBytes / 1e6).toFixed(0)} MB to the end of the first list, then ` +
      Object.entries(r.leaderRssByPhase)
        .map(([k, v]) => `${(v / 1e6).toFixed(0)} MB in the ${k}`)
        .join(', ') +
      `; node ${WORKER_NODE_ARGS.join(' ') || '(V8 defaults)'}` +
      (r.failure ? `; ${r.failure}` : ''),
  });
  const fresh = (scenario: string, s: Samples, p: number, maxMs: number | undefined, what: string): Row => {
    const failed = s.ours.filter((x) => !Number.isFinite(x)).length;
    // A sample that never came counts as never: it lands at the top of the distribution.
    const ours = percentile(
      s.ours.map((x) => (Number.isFinite(x) ? x : Infinity)),
      p,
    );
    const base = percentile(
      s.bare.filter((x) => Number.isFinite(x)),
      p,
    );
    return {
      scenario,
      size,
      metric: `p${p}`,
      ours,
      baseline: base,
      unit: 'ms',
      ratio: ours / base,
      ratioMeaning: '× a bare watch',
      target: maxMs === undefined ? '—' : `≤ ${maxMs} ms`,
      met: maxMs === undefined ? (failed ? false : undefined) : ours <= maxMs && failed === 0,
      note: s.ours.length
        ? `${s.ours.length} ${what}${failed ? `, ${failed} not seen within ${TIMEOUT_MS / 1000} s` : ''}`
        : 'not measured: a worker died before',
    };
  };
  const pod = 'watch: pod deleted → replacement in /instances';
  const crash = 'watch: crash → report at CC';
  const job = "watch: task's Job finished → callback";
  rows.push(fresh(pod, r.replaced, 50, 1000, 'replacements (delete, create, status: Running)'));
  rows.push(fresh(pod, r.replaced, 99, 3000, 'replacements'));
  rows.push(fresh(crash, r.crashed, 50, 2000, 'crashes (restartCount 0 → 1)'));
  rows.push(fresh(crash, r.crashed, 99, undefined, 'crashes'));
  rows.push(fresh(job, r.task, 50, 2000, 'tasks (Job status: Complete)'));
  rows.push(fresh(job, r.task, 99, undefined, 'tasks'));
  return rows;
}

/** Every size on every cluster asked for; the rows, and the raw results for latest.json. */
export async function watchCache(
  o: WatchCacheOptions,
  results: string,
): Promise<{ rows: Row[]; details: SizeResult[] }> {
  const clusters: ('sim' | 'real')[] = o.kubeconfig ? (o.withSim ? ['sim', 'real'] : ['real']) : ['sim'];
  const rows: Row[] = [];
  const details: SizeResult[] = [];
  for (const kind of clusters) {
    for (const size of o.sizes) {
      const r = await runSize(o, kind, size, results);
      details.push(r);
      rows.push(...rowsOf(r, o));
    }
  }
  return { rows, details };
}
