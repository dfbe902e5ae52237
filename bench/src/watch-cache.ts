/**
 * The watch scenario (`--only=watch`): one run per cluster and size of the service watching the cluster
 * instead of listing it, with the figures it was built for measured beside their baselines.
 */
import { randomBytes } from 'node:crypto';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { StateStore } from '@opi/state';
import { type CcSink, startCcSink } from './cc-sink.js';
import { REDIS_URL, log, sleep } from './common.js';
import {
  type CountingProxy,
  type Tally,
  countsBetween,
  countsRecord,
  describeCounts,
  startCountingProxy,
  sumCounts,
} from './kube-proxy.js';
import type { WatchCacheOptions } from './options.js';
import {
  type Child,
  type RssSampler,
  deathOf,
  ended,
  rssSampler,
  startSideBySide,
  stopChild,
} from './processes.js';
import type { Row } from './report.js';
import { recordWatchLrps, seededPods } from './seeding.js';
import { awaitFirstSync, deletePrefix, firstListMs, startApi, startWorker, uniquePrefix } from './service.js';
import { BareWatch, bareList } from './watch-baselines.js';
import { realTarget, serverCpu, serverCpuOver, simTarget } from './watch-clusters.js';
import { freshness } from './watch-freshness.js';
import { KINDS, type SizeResult, rowsOf } from './watch-report.js';

/** One kind's entry in the cache writer's status hash. */
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
    const meta = await state.cacheMeta();
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

/** A worker process ended during the run: what was measured until then is reported, the rest is not. */
class WorkerDied extends Error {}

/**
 * One run: a fresh cluster (or namespace, `--kubeconfig`) and Redis prefix, `size` LRPs recorded and
 * converged (a Deployment at its record's generation and one Running pod each), then the API and the
 * workers (`--workers`) as production starts them, each worker talking to the cluster through its own
 * counting proxy (kube-proxy.ts). The bench plays the controllers and the kubelet itself (the simulated
 * cluster runs without them; a real one should be started with `--api-only`), so what is timed is the
 * service's reaction to a change, not a controller's. Measured:
 * - the first list applied (the cache writer's own log line) against a bare paged list of the same
 *   collections through the same adapter and proxy, in a process of its own, before and after;
 * - over an idle window (`--window-s`, resyncs every `--resync-s` inside it): the LIST requests per kind,
 *   extrapolated to an hour, and on a real server kube-apiserver's and etcd's CPU against the same
 *   window with the service stopped, before and after;
 * - the leader's peak RSS (/proc VmRSS), against a worker that does not hold the Lease;
 * - freshness, `--repeat` times each (watch-freshness.ts), against a bare watch of the same objects.
 */
async function runSize(
  o: WatchCacheOptions,
  kind: 'sim' | 'real',
  size: number,
  results: string,
): Promise<SizeResult> {
  const namespace = `opi-bench-${randomBytes(3).toString('hex')}`;
  const prefix = uniquePrefix('wc');
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
    const seeded = await recordWatchLrps(state, size, namespace);
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
    const api = await startApi(prefix, join(results, `watch-${kind}-api.log`), namespace);
    children.push(api);
    const workerEnv = {
      CC_INTERNAL_URL: sink.url,
      OPI_RESYNC_INTERVAL_MS: String(o.resyncSeconds * 1000),
      // The bench's namespace only: a shared real server may hold other services' objects.
      OPI_SYNC_ALL_NAMESPACES: 'false',
    };
    const workers: Child[] = [];
    sampler = rssSampler(() => workers.map((w) => w.pid));
    await startSideBySide(o.workers, async (i) => {
      const proxy = await startCountingProxy(target.upstream.kc, target.upstream.plainUrl);
      proxies[i] = proxy;
      const file = join(results, `watch-${kind}-worker-${i}.kubeconfig`);
      await writeFile(file, proxy.kubeconfig(namespace));
      const w = await startWorker(
        prefix,
        { ...workerEnv, KUBECONFIG: file },
        join(results, `watch-${kind}-worker-${i}.log`),
        namespace,
      );
      workers[i] = w;
      children.push(w);
      return w;
    });
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
      r.firstListMs = await firstListMs(l);
      log(`[${tag}] first list applied in ${Math.round(r.firstListMs)} ms by worker ${l.pid}`);
      // The first reconcile runs right after the first list; the idle window starts after it.
      await awaitFirstSync(l, 600_000, alive);
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
