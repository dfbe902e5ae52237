/**
 * The cache writer's cases' world: the API, three workers (one holds the Lease and writes the cache), a
 * private Redis, the simulated cluster and a stand-in CC; with the load CC's users add and the checks after
 * each fault.
 */
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CoordinationV1Api, CoreV1Api, KubeConfig } from '@kubernetes/client-node';
import { Redis } from 'ioredis';
import { FAST_BEHAVIOUR, type Simulator, startSimulator } from '@opi/kube-sim';
import { taskBody, uuid } from '@opi/contract/testing';
import { eventually } from '../support/eventually.js';
import { type FakeCc, startFakeCc } from '../support/fake-cc.js';
import { parseMetrics } from '../support/prometheus-text.js';
import {
  type CacheApp,
  type CachedEntry,
  type InstancesAnswer,
  crashReports,
  instancesShown,
  repeatedReports,
} from './cache-checks.js';
import { type TaskModel, appDesireBody, taskEnv } from './cc-model.js';
import { CACHE_APPS, NAMESPACE, num } from './config.js';
import { pool, request, sleep } from './http.js';
import { type ServiceProcess, alive, kill, logTail, spawnService } from './processes.js';
import { mulberry32 } from './prng.js';
import { type PrivateRedis, freePort, startPrivateRedis } from './redis-server.js';

const CACHE_CRASHING = 3;
/** Freshness must be back this long after a fault (the Lease here: 6 s, renew deadline 4 s). */
const FRESH_MS = 30_000;
const LEASE_NAME = 'opi-cache-writer';
const CACHE_PREFIX = 'cachechaos';

/**
 * The cache writer under chaos. One worker holds the Lease, watches the cluster and writes the instances
 * cache; here the periodic sync is ten minutes away, so only the watch keeps /instances fresh. Four faults
 * in turn, with a CC-like load (scaling, tasks, deleted pods) and three crash-looping apps throughout:
 * watches cut again and again, a compaction storm (410s: every kind relists), the Lease holder
 * SIGKILLed, and the next holder SIGSTOPped past its Lease and then resumed. After each: no LRP lost (its
 * pods, exactly, in the cache and /instances), no report to CC twice, no stale write accepted (the fence
 * is the current holder's term, the watch status is the holder's), and a pod deleted right after the
 * fault has its replacement in /instances within 30 s.
 */
export class CacheChaos {
  private started = Date.now();
  sim!: Simulator;
  redis!: PrivateRedis;
  cc!: FakeCc;
  api!: ServiceProcess;
  readonly workers: ServiceProcess[] = [];
  readonly metricsPorts = new Map<ServiceProcess, number>();
  base = '';
  logDir = '';
  private kubeconfigFile = '';
  private env: Record<string, string> = {};
  private core!: CoreV1Api;
  private coordination!: CoordinationV1Api;
  private client!: Redis;
  private workerNo = 0;
  private readonly rand = mulberry32(num('CHAOS_CACHE_SEED', 1));
  readonly apps: CacheApp[] = [];
  readonly tasks: string[] = [];
  private updates = 0;
  /** Apps a freshness probe is watching: the load does not touch them. */
  private readonly probing = new Set<CacheApp>();

  say(line: string): void {
    process.stdout.write(`[chaos cache +${((Date.now() - this.started) / 1000).toFixed(1)}s] ${line}\n`);
  }

  async start(): Promise<void> {
    this.started = Date.now();
    this.logDir = await mkdtemp(join(tmpdir(), 'opi-chaos-cache-'));
    this.say(`logs in ${this.logDir}`);
    this.sim = await startSimulator({ behaviour: FAST_BEHAVIOUR, namespaces: [NAMESPACE], seed: 101 });
    this.kubeconfigFile = join(this.logDir, 'kubeconfig');
    await this.sim.writeKubeconfig(this.kubeconfigFile);
    const kc = new KubeConfig();
    kc.loadFromString(this.sim.kubeconfig());
    this.core = kc.makeApiClient(CoreV1Api);
    this.coordination = kc.makeApiClient(CoordinationV1Api);
    this.redis = await startPrivateRedis();
    this.client = new Redis(this.redis.url);
    this.cc = await startFakeCc({ rejectRepeats: true });
    const apiPort = await freePort();
    this.base = `http://127.0.0.1:${apiPort}`;
    this.env = {
      REDIS_URL: this.redis.url,
      OPI_QUEUE_PREFIX: CACHE_PREFIX,
      OPI_NAMESPACE: NAMESPACE,
      // Only the watch keeps the cache fresh; the sync is the rare safety net it is in production.
      OPI_RESYNC_INTERVAL_MS: '600000',
      // Short, not absurd: a takeover within seconds, renewals well within the deadline.
      OPI_LEASE_DURATION_MS: '6000',
      OPI_LEASE_RENEW_DEADLINE_MS: '4000',
      OPI_LEASE_RETRY_PERIOD_MS: '1000',
      // Longer than the pause below: a frozen worker's jobs are delayed, not taken by another worker.
      OPI_JOB_LOCK_MS: '20000',
      OPI_WORKER_CONCURRENCY: '8',
      OPI_SHUTDOWN_TIMEOUT_MS: '2000',
      CC_INTERNAL_URL: this.cc.url,
      OPI_CALLBACK_BACKOFF_MS: '200',
      HOST: '127.0.0.1',
      LOG_LEVEL: process.env['CHAOS_LOG_LEVEL'] ?? 'warn',
    };
    this.api = spawnService(
      'api',
      'api',
      { ...this.env, PORT: String(apiPort), OPI_METRICS_PORT: '0' },
      this.logDir,
    );
    for (let i = 0; i < 3; i++) await this.addWorker();
    for (let i = 0; i < 200 && (await request(this.base, 'GET', '/apps')).status === 0; i++) await sleep(100);

    for (let i = 0; i < CACHE_APPS; i++) {
      const guid = uuid(i, 'cache');
      const version = uuid(i, 'cachev');
      this.apps.push({
        guid,
        version,
        pg: `${guid}-${version}`,
        instances: i < CACHE_CRASHING ? 1 : 1 + Math.floor(this.rand() * 2),
        annotation: '1.000001',
        crash: i < CACHE_CRASHING,
      });
    }
    await pool(this.apps, 8, async (a) => {
      const env = a.crash ? { KUBESIM_BEHAVIOUR: 'crash', KUBESIM_RUN_MS: '1500' } : { GREETING: 'hello' };
      const body = appDesireBody({ ...a, image: 'registry.example/app:1' }, { environment: env });
      await this.must('PUT', `/apps/${a.pg}`, body, 202);
    });
    await this.expectConsistent('start', 60_000);
    this.say(`${CACHE_APPS} apps running, ${CACHE_CRASHING} of them crash-looping`);
  }

  async addWorker(): Promise<ServiceProcess> {
    const port = await freePort();
    const w = spawnService(
      'worker',
      `worker-${++this.workerNo}`,
      { ...this.env, KUBECONFIG: this.kubeconfigFile, OPI_METRICS_PORT: String(port) },
      this.logDir,
    );
    this.workers.push(w);
    this.metricsPorts.set(w, port);
    return w;
  }

  /** Ends what start() got to start (SIGKILL also ends a frozen process). */
  async close(): Promise<void> {
    await Promise.all([...(this.api ? [kill(this.api)] : []), ...this.workers.map((w) => kill(w))]);
    this.client?.disconnect();
    await this.cc?.close();
    await this.redis?.close();
    await this.sim?.close();
  }

  /** An API call that must be answered `status` (the API itself is not under chaos here). */
  private async must(method: string, path: string, body: unknown, status: number): Promise<void> {
    for (let i = 0; ; i++) {
      const r = await request(this.base, method, path, body);
      if (r.status === status) return;
      if (i >= 5) throw new Error(`${method} ${path}: ${r.status} ${r.text}`);
      await sleep(500);
    }
  }

  async lease(): Promise<{ holder: string; transitions: number }> {
    const l = await this.coordination.readNamespacedLease({ name: LEASE_NAME, namespace: NAMESPACE });
    return { holder: l.spec?.holderIdentity ?? '', transitions: l.spec?.leaseTransitions ?? 0 };
  }

  /** The live worker process a Lease holder identity names (`<host>-<pid>-<random>`). */
  processOf(holder: string): ServiceProcess | undefined {
    const pid = Number(holder.split('-').at(-2));
    return this.workers.find((w) => w.proc.pid === pid && alive(w));
  }

  /** The live holder (not `except`), once one holds the Lease and has written the watch status. */
  async holder(except?: string): Promise<{ sp: ServiceProcess; identity: string; token: number }> {
    return eventually(
      async () => {
        const { holder, transitions } = await this.lease();
        const sp = holder === except ? undefined : this.processOf(holder);
        const status = await this.client.hget(`${CACHE_PREFIX}:state:watch`, 'pods');
        if (!sp || !status || (JSON.parse(status) as { holder: string }).holder !== holder) return undefined;
        return { sp, identity: holder, token: transitions };
      },
      'a live worker to hold the Lease and report its watches',
      FRESH_MS,
    );
  }

  async metrics(sp: ServiceProcess): Promise<Map<string, number> | undefined> {
    try {
      const res = await fetch(`http://127.0.0.1:${this.metricsPorts.get(sp) ?? 0}/metrics`, {
        signal: AbortSignal.timeout(5000),
      });
      return res.status === 200 ? parseMetrics(await res.text()) : undefined;
    } catch {
      return undefined;
    }
  }

  /** Live app pods in the cluster by process guid. */
  private async clusterPods(): Promise<Map<string, string[]>> {
    const out = new Map<string, string[]>();
    let token: string | undefined;
    do {
      const page = await this.core.listNamespacedPod({
        namespace: NAMESPACE,
        labelSelector: 'app.kubernetes.io/managed-by=opi-server,cloudfoundry.org/source_type=APP',
        limit: 500,
        _continue: token,
      });
      for (const p of page.items) {
        const labels = p.metadata?.labels ?? {};
        const pg = `${labels['cloudfoundry.org/guid'] ?? ''}-${labels['cloudfoundry.org/version'] ?? ''}`;
        if (p.metadata?.deletionTimestamp || !p.metadata?.name) continue;
        out.set(pg, [...(out.get(pg) ?? []), p.metadata.name]);
      }
      token = page.metadata?._continue;
    } while (token);
    return out;
  }

  /**
   * What is wrong between the model, the cluster and the cache: an LRP without its pods (lost), a cache
   * entry that is not exactly the LRP's live pods with unique indexes (stale), an entry for no LRP.
   */
  private async inconsistencies(): Promise<string[]> {
    const pods = await this.clusterPods();
    const cache = await this.client.hgetall(`${CACHE_PREFIX}:state:instances`);
    const problems: string[] = [];
    for (const a of this.apps) {
      const live = (pods.get(a.pg) ?? []).sort();
      const raw = cache[a.pg];
      const entry = raw === undefined ? undefined : (JSON.parse(raw) as CachedEntry);
      const cached = (entry?.instances ?? []).map((i) => i.podName).sort();
      const indexes = (entry?.instances ?? []).map((i) => i.index).sort((x, y) => x - y);
      if (live.length !== a.instances) problems.push(`${a.pg}: ${live.length} of ${a.instances} pods live`);
      else if (cached.join() !== live.join())
        problems.push(`${a.pg}: the cache has [${cached.join(' ')}], the cluster [${live.join(' ')}]`);
      else if (new Set(indexes).size !== indexes.length)
        // Unique, not necessarily 0..n-1: a pod keeps its index, and a scale-down may remove any pod.
        problems.push(`${a.pg}: indexes ${indexes.join(',')}`);
      else if (!a.crash && !entry?.instances.every((i) => i.state === 'RUNNING'))
        problems.push(`${a.pg}: not all RUNNING in the cache`);
    }
    const known = new Set(this.apps.map((a) => a.pg));
    for (const pg of Object.keys(cache)) if (!known.has(pg)) problems.push(`${pg}: an entry for no LRP`);
    return problems;
  }

  /** Every LRP with exactly its pods in the cache and /instances, within `timeoutMs`. */
  async expectConsistent(phase: string, timeoutMs: number): Promise<void> {
    let last: string[] = [];
    const ok = await eventually(
      async () => {
        last = await this.inconsistencies();
        return last.length === 0;
      },
      'the cache to match the cluster',
      timeoutMs,
      500,
    ).catch(() => false);
    if (!ok) this.say(`${phase}: inconsistent: ${last.slice(0, 10).join('; ')}`);
    expect(last).toEqual([]);
    const unclaimed: string[] = [];
    await pool(this.apps, 8, async (a) => {
      const r = await request(this.base, 'GET', `/apps/${a.guid}/${a.version}/instances`);
      const rows = r.status === 200 ? (JSON.parse(r.text) as InstancesAnswer).instances : [];
      if (!instancesShown(a, rows))
        unclaimed.push(`${a.pg}: ${r.status} ${rows.map((i) => `${i.index}:${i.state}`).join(',')}`);
    });
    expect(unclaimed).toEqual([]);
  }

  /** The cache holds the current holder's writes only: the fence is its term, the watch status is its. */
  async expectHoldersWrites(): Promise<{ sp: ServiceProcess; identity: string; token: number }> {
    const h = await this.holder();
    const fence = await this.client.get(`${CACHE_PREFIX}:state:cache:fence`);
    const status = await this.client.hgetall(`${CACHE_PREFIX}:state:watch`);
    expect({
      fence,
      kinds: Object.keys(status).sort(),
      writers: [...new Set(Object.values(status).map((s) => (JSON.parse(s) as { holder: string }).holder))],
    }).toEqual({
      fence: String(h.token),
      // Every watched kind's status, each written by the holder.
      kinds: ['deployments', 'events', 'jobs', 'pods', 'statefulsets'],
      writers: [h.identity],
    });
    return h;
  }

  /**
   * A pod of a running app deleted now has its replacement in /instances (and the cache) within
   * FRESH_MS: the watch is back, whoever holds the Lease.
   */
  async expectFresh(phase: string): Promise<void> {
    const candidates = this.apps.filter((a) => !a.crash && !this.probing.has(a));
    const a = candidates[Math.floor(this.rand() * candidates.length)]!;
    // The load leaves this app alone meanwhile.
    this.probing.add(a);
    try {
      await this.probe(phase, a);
    } finally {
      this.probing.delete(a);
    }
  }

  private async probe(phase: string, a: CacheApp): Promise<void> {
    const entry = await eventually(
      async () => {
        const raw = await this.client.hget(`${CACHE_PREFIX}:state:instances`, a.pg);
        const e = raw ? (JSON.parse(raw) as CachedEntry) : undefined;
        return e?.instances.length === a.instances ? e : undefined;
      },
      `${a.pg} in the cache`,
      FRESH_MS,
    );
    const victim = entry.instances[0]!.podName;
    const deletedAt = Date.now();
    await this.core.deleteNamespacedPod({ namespace: NAMESPACE, name: victim });
    await eventually(
      async () => {
        const raw = await this.client.hget(`${CACHE_PREFIX}:state:instances`, a.pg);
        const e = raw ? (JSON.parse(raw) as CachedEntry) : undefined;
        if (!e || e.instances.some((i) => i.podName === victim) || e.instances.length !== a.instances)
          return false;
        const r = await request(this.base, 'GET', `/apps/${a.guid}/${a.version}/instances`);
        return r.status === 200 && instancesShown(a, (JSON.parse(r.text) as InstancesAnswer).instances);
      },
      `${phase}: the replacement of ${victim} in /instances`,
      FRESH_MS,
    );
    this.say(`${phase}: a deleted pod's replacement was in /instances after ${Date.now() - deletedAt} ms`);
  }

  /** What CC's users do meanwhile: scale apps, run tasks, and pods go away. */
  async load(until: () => boolean): Promise<void> {
    while (!until()) {
      const running = this.apps.filter((a) => !a.crash && !this.probing.has(a));
      for (let k = 0; k < 2; k++) {
        const a = running[Math.floor(this.rand() * running.length)]!;
        a.instances = 1 + Math.floor(this.rand() * 3);
        a.annotation = `${2 + ++this.updates}.000001`;
        await this.must(
          'POST',
          `/apps/${a.pg}`,
          { guid: a.guid, version: a.version, update: { instances: a.instances, annotation: a.annotation } },
          200,
        );
      }
      for (let k = 0; k < 2; k++) {
        const t: TaskModel = {
          guid: uuid(this.tasks.length, 'cachet'),
          created: true,
          accepted: true,
          fails: false,
          runMs: 300 + Math.floor(this.rand() * 3000),
          posts: 1,
        };
        this.tasks.push(t.guid);
        await this.must('POST', `/tasks/${t.guid}`, taskBody(this.cc.url, t.guid, taskEnv(t)), 202);
      }
      const victim = running[Math.floor(this.rand() * running.length)]!;
      const pods = await this.core.listNamespacedPod({
        namespace: NAMESPACE,
        labelSelector: `cloudfoundry.org/guid=${victim.guid},cloudfoundry.org/version=${victim.version}`,
      });
      const pod = pods.items.find((p) => !p.metadata?.deletionTimestamp)?.metadata?.name;
      if (pod)
        await this.core.deleteNamespacedPod({ namespace: NAMESPACE, name: pod }).catch(() => undefined);
      await sleep(1500);
    }
  }

  /** Runs `fault` under load, then checks the four properties. */
  async phase(name: string, fault: () => Promise<void>): Promise<void> {
    const t0 = Date.now();
    const crashesBefore = crashReports(this.cc);
    let done = false;
    const load = this.load(() => done);
    try {
      await fault();
    } finally {
      done = true;
      await load;
    }
    await this.expectFresh(name);
    await this.expectConsistent(name, FRESH_MS);
    expect(repeatedReports(this.cc)).toEqual([]);
    const h = await this.expectHoldersWrites();
    for (const w of this.workers) {
      if (w.unexpectedExit !== undefined) this.say(`${w.name} exited by itself: ${logTail(w, 5)}`);
      expect(w.unexpectedExit).toBeUndefined();
    }
    this.say(
      `${name}: done in ${((Date.now() - t0) / 1000).toFixed(0)} s; holder ${h.sp.name} (term ${h.token}),` +
        ` ${crashReports(this.cc) - crashesBefore} crash reports, ${this.tasks.length} tasks so far`,
    );
  }

  /** Every task run so far has its completion, once. */
  async expectTasksReported(): Promise<void> {
    let missing: string[] = [];
    await eventually(
      async () => {
        const got = new Set(
          this.cc.calls
            .filter((c) => c.status === 200)
            .map((c) => /\/tasks\/([^/]+)\/completed$/.exec(c.path)?.[1]),
        );
        missing = this.tasks.filter((g) => !got.has(g));
        return missing.length === 0;
      },
      'every task completion',
      60_000,
      500,
    ).catch(() => undefined);
    expect(missing).toEqual([]);
    expect(repeatedReports(this.cc)).toEqual([]);
  }
}
