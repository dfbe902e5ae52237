/**
 * The chaos suite (`npm run test:chaos`): the API and worker processes, a private Redis with AOF and the
 * simulated cluster, driven by a CC-like convergence loop over hundreds of apps and tasks while a seeded
 * plan SIGKILLs workers, SIGKILLs and restarts Redis, flushes Redis once, makes the cluster slow, answer
 * 500/503/429, drop connections and cut watches, and takes CC's callback endpoint down for a minute or
 * more. Then everything is healed and the suite waits for convergence and counts: every desired app
 * with the right spec, every stopped one gone, every task's callback exactly once, nothing duplicated.
 * One repeat is inherent to at-least-once delivery and is counted apart: a worker SIGKILLed between CC's
 * answer and its record of it (CC answers the repeat 400).
 *
 * CHAOS_SEEDS=1,2,3 (default) replays plans; CHAOS_APPS, CHAOS_TASKS, CHAOS_DURATION_MS, CHAOS_CC_DOWN_MS
 * size them. Logs of every process stay in the temporary directory printed with the counts.
 *
 * A second part puts the cache writer (the one Lease holder watching the cluster) through cut watches, a
 * compaction storm, a SIGKILL and a SIGSTOP past its Lease (about a minute; CHAOS_CACHE_APPS,
 * CHAOS_CACHE_FAULT_MS, CHAOS_CACHE_SEED); `-t 'the cache writer'` runs it alone.
 */
import { mkdtemp, readFile, readdir } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { AppsV1Api, CoordinationV1Api, CoreV1Api, KubeConfig } from '@kubernetes/client-node';
import { Redis } from 'ioredis';
import { FAST_BEHAVIOUR, type FaultConfig, type Simulator, startSimulator } from '@opi/kube-sim';
import { eventually } from '../support/eventually.js';
import { type FakeCc, startFakeCc } from '../support/fake-cc.js';
import { taskBody } from '../support/task-body.js';
import { type ServiceProcess, alive, freeze, kill, logTail, spawnService } from './processes.js';
import { type PrivateRedis, freePort, startPrivateRedis } from './redis-server.js';

const NAMESPACE = 'cf-workloads';
const num = (name: string, dflt: number): number => {
  const v = process.env[name];
  return v === undefined || v === '' ? dflt : Number(v);
};
const SEEDS = (process.env['CHAOS_SEEDS'] ?? '1,2,3')
  .split(',')
  .map((s) => Number(s.trim()))
  .filter((n) => Number.isInteger(n));
const APPS = num('CHAOS_APPS', 300);
const TASKS = num('CHAOS_TASKS', 100);
const CHAOS_MS = num('CHAOS_DURATION_MS', 75_000);
const CC_DOWN_MS = num('CHAOS_CC_DOWN_MS', 90_000);
const CONVERGE_TIMEOUT_MS = num('CHAOS_CONVERGE_TIMEOUT_MS', 240_000);
const WORKERS = 3;
const SYNC_MS = 1000;

/** mulberry32: a small seeded PRNG, so a seed names one plan. */
function mulberry32(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

function uuid(n: number, salt: string): string {
  return `${salt.padEnd(8, '0').slice(0, 8)}-0000-4000-8000-${n.toString(16).padStart(12, '0')}`;
}

async function request(
  base: string,
  method: string,
  path: string,
  body?: unknown,
  bearer?: string,
): Promise<{ status: number; text: string }> {
  const headers: Record<string, string> = bearer ? { authorization: `Bearer ${bearer}` } : {};
  if (body !== undefined) headers['content-type'] = 'application/json';
  try {
    const res = await fetch(`${base}${path}`, {
      method,
      signal: AbortSignal.timeout(15_000),
      headers,
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    return { status: res.status, text: await res.text() };
  } catch (err) {
    return { status: 0, text: err instanceof Error ? err.message : String(err) };
  }
}

/** Runs `fn` over `items`, at most `limit` at once. */
async function pool<T>(items: readonly T[], limit: number, fn: (t: T) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(limit, items.length) }, async () => {
      while (next < items.length) {
        const item = items[next++] as T;
        await fn(item);
      }
    }),
  );
}

interface AppModel {
  guid: string;
  version: string;
  pg: string;
  wanted: 'running' | 'stopped';
  instances: number;
  annotation: string;
  image: string;
}

interface TaskModel {
  guid: string;
  /** Whether CC "created" it yet (tasks are created over the chaos phase). */
  created: boolean;
  /** The last POST was answered 202. */
  accepted: boolean;
  fails: boolean;
  runMs: number;
  posts: number;
}

function desireBody(a: AppModel): Record<string, unknown> {
  return {
    guid: a.guid,
    version: a.version,
    process_guid: a.pg,
    process_type: 'web',
    app_guid: a.guid,
    app_name: `app-${a.guid.slice(-6)}`,
    space_guid: 'space-1',
    space_name: 'dev',
    organization_guid: 'org-1',
    organization_name: 'org',
    ports: [8080],
    environment: { GREETING: 'hello' },
    instances: a.instances,
    last_updated: a.annotation,
    health_check_type: 'port',
    health_check_timeout_ms: 60000,
    memory_mb: 64,
    disk_mb: 256,
    cpu_weight: 1,
    lifecycle: { docker_lifecycle: { image: a.image, command: [] } },
  };
}

/** A task's run time and, for one that fails, exit code, in the simulated cluster. */
function taskEnv(t: TaskModel): Record<string, string> {
  const env: Record<string, string> = { KUBESIM_RUN_MS: String(t.runMs) };
  if (t.fails) Object.assign(env, { KUBESIM_BEHAVIOUR: 'fail', KUBESIM_EXIT_CODE: '3' });
  return env;
}

/** Completion callbacks CC processed (answered below 500), by task guid; the path names the task. */
function deliveries(cc: FakeCc): Map<string, number> {
  const out = new Map<string, number>();
  for (const [guid, answered] of deliveryTimes(cc)) out.set(guid, answered.length);
  return out;
}

/** When CC answered each task's completions (below 500: CC took or refused it), by task guid. */
function deliveryTimes(cc: FakeCc): Map<string, number[]> {
  const out = new Map<string, number[]>();
  for (const c of cc.calls) {
    const m = /^\/internal\/v4\/tasks\/([^/]+)\/completed$/.exec(c.path);
    if (!m?.[1] || c.status === undefined || c.status >= 500) continue;
    out.set(m[1], [...(out.get(m[1]) ?? []), c.answeredAt ?? 0]);
  }
  return out;
}

/**
 * How long after CC's answer a worker's SIGKILL may have kept it from recording the delivery. A worker
 * killed in that window cannot know CC took the report, so its job's retry posts again: no design
 * avoids that short of CC deduplicating, which it does (400). It is generous against a loaded machine.
 */
const KILL_WINDOW_MS = 1000;

type ChaosAction =
  | { at: number; kind: 'kill-worker'; pick: number; respawnAfterMs: number }
  | { at: number; kind: 'redis-restart'; downMs: number }
  | { at: number; kind: 'redis-flush' }
  | { at: number; kind: 'faults'; config: Partial<FaultConfig>; label: string }
  | { at: number; kind: 'cut-watches' }
  | { at: number; kind: 'cc-down'; ms: number };

/** The log lines of every process in `dir` that name `needle`, cut short. */
async function linesNaming(dir: string, needle: string): Promise<string[]> {
  const out: string[] = [];
  for (const f of (await readdir(dir)).filter((n) => n.endsWith('.log')).sort()) {
    for (const line of (await readFile(join(dir, f), 'utf8')).split('\n')) {
      if (line.includes(needle)) out.push(`${f}: ${line.slice(0, 300)}`);
    }
  }
  return out.slice(0, 12);
}

/** The whole chaos plan of one seed, drawn up front so the seed alone names it. */
function plan(rand: () => number): ChaosAction[] {
  const D = CHAOS_MS;
  const between = (lo: number, hi: number) => lo + rand() * (hi - lo);
  const out: ChaosAction[] = [];
  // CC's outage overlaps everything else, and outlasts the rest of the chaos by default.
  out.push({ at: between(0.1, 0.2) * D, kind: 'cc-down', ms: CC_DOWN_MS });
  for (let t = between(2000, 6000); t < D; t += between(3000, 9000)) {
    out.push({ at: t, kind: 'kill-worker', pick: rand(), respawnAfterMs: between(0, 2000) });
  }
  for (let i = 0; i < 2; i++)
    out.push({ at: between(0.1, 0.9) * D, kind: 'redis-restart', downMs: between(500, 3000) });
  out.push({ at: between(0.35, 0.65) * D, kind: 'redis-flush' });
  const phases: [string, Partial<FaultConfig>][] = [
    ['slow', { latencyMs: 150, jitterMs: 350 }],
    ['errors 500/503/429', { errorRate: 0.25, errorCodes: [500, 503, 429], retryAfterSeconds: 1 }],
    ['dropped connections', { dropRate: 0.15 }],
    ['all at once', { latencyMs: 50, jitterMs: 200, errorRate: 0.15, dropRate: 0.08, conflictRate: 0.1 }],
    ['calm', {}],
  ];
  for (let t = between(1000, 3000); t < D; t += between(5000, 12000)) {
    const [label, config] = phases[Math.floor(rand() * phases.length)] ?? ['calm', {}];
    out.push({ at: t, kind: 'faults', label, config });
  }
  for (let i = 0; i < 5; i++) out.push({ at: between(0, 1) * D, kind: 'cut-watches' });
  return out.sort((a, b) => a.at - b.at);
}

interface Counts {
  seed: number;
  desired: number;
  presentCorrect: number;
  lost: number;
  wrongSpec: number;
  stopped: number;
  leftover: number;
  duplicateDeployments: number;
  unknownDeployments: number;
  tasks: number;
  callbacksOnce: number;
  missing: number;
  duplicated: number;
  /** Repeats whose first delivery was answered just before a worker was SIGKILLed (KILL_WINDOW_MS). */
  repeatedAfterKill: number;
  unknownCallbacks: number;
}

async function clusterDeployments(
  apps: AppsV1Api,
): Promise<Map<string, { replicas: number; image: string; annotation: string }[]>> {
  const out = new Map<string, { replicas: number; image: string; annotation: string }[]>();
  let token: string | undefined;
  do {
    const page = await apps.listNamespacedDeployment({
      namespace: NAMESPACE,
      labelSelector: 'app.kubernetes.io/managed-by=opi-server',
      limit: 500,
      _continue: token,
    });
    for (const d of page.items) {
      const pg = d.metadata?.annotations?.['cloudfoundry.org/process_guid'];
      if (!pg || d.metadata?.deletionTimestamp) continue;
      const entry = {
        replicas: d.spec?.replicas ?? 0,
        image: d.spec?.template.spec?.containers[0]?.image ?? '',
        annotation: d.metadata?.annotations?.['cloudfoundry.org/last_updated'] ?? '',
      };
      out.set(pg, [...(out.get(pg) ?? []), entry]);
    }
    token = page.metadata?._continue;
  } while (token);
  return out;
}

async function count(
  seed: number,
  model: AppModel[],
  tasks: TaskModel[],
  cc: FakeCc,
  apps: AppsV1Api,
  killedAt: readonly number[] = [],
): Promise<Counts> {
  const deps = await clusterDeployments(apps);
  const got = deliveryTimes(cc);
  const known = new Set(model.map((a) => a.pg));
  const taskGuids = new Set(tasks.filter((t) => t.created).map((t) => t.guid));
  const c: Counts = {
    seed,
    desired: 0,
    presentCorrect: 0,
    lost: 0,
    wrongSpec: 0,
    stopped: 0,
    leftover: 0,
    duplicateDeployments: 0,
    unknownDeployments: [...deps.keys()].filter((pg) => !known.has(pg)).length,
    tasks: taskGuids.size,
    callbacksOnce: 0,
    missing: 0,
    duplicated: 0,
    repeatedAfterKill: 0,
    unknownCallbacks: [...got.keys()].filter((g) => !taskGuids.has(g)).length,
  };
  for (const [, ds] of deps) if (ds.length > 1) c.duplicateDeployments += ds.length - 1;
  for (const a of model) {
    const ds = deps.get(a.pg) ?? [];
    if (a.wanted === 'running') {
      c.desired++;
      const d = ds[0];
      if (!d) c.lost++;
      else if (d.replicas === a.instances && d.image === a.image && d.annotation === a.annotation)
        c.presentCorrect++;
      else c.wrongSpec++;
    } else {
      c.stopped++;
      if (ds.length > 0) c.leftover++;
    }
  }
  for (const g of taskGuids) {
    const answered = got.get(g) ?? [];
    const first = answered[0] ?? 0;
    if (answered.length === 0) c.missing++;
    else if (answered.length === 1) c.callbacksOnce++;
    else if (answered.length === 2 && killedAt.some((k) => k >= first && k - first <= KILL_WINDOW_MS))
      c.repeatedAfterKill++;
    else c.duplicated++;
  }
  return c;
}

function converged(c: Counts): boolean {
  return (
    c.lost === 0 &&
    c.wrongSpec === 0 &&
    c.leftover === 0 &&
    c.duplicateDeployments === 0 &&
    c.unknownDeployments === 0 &&
    c.missing === 0
  );
}

async function runSeed(seed: number): Promise<void> {
  const started = Date.now();
  const rand = mulberry32(seed);
  const ccRand = mulberry32(seed * 7919 + 17);
  const logDir = await mkdtemp(join(tmpdir(), `opi-chaos-${seed}-`));
  const say = (line: string) => {
    process.stdout.write(`[chaos seed ${seed} +${((Date.now() - started) / 1000).toFixed(1)}s] ${line}\n`);
  };
  say(`plan drawn; logs in ${logDir}`);

  const sim: Simulator = await startSimulator({
    behaviour: { ...FAST_BEHAVIOUR, nodes: { ...FAST_BEHAVIOUR.nodes, count: 12 } },
    namespaces: [NAMESPACE],
    seed,
  });
  const kubeconfigFile = join(logDir, 'kubeconfig');
  await sim.writeKubeconfig(kubeconfigFile);
  const kc = new KubeConfig();
  kc.loadFromString(sim.kubeconfig());
  const appsApi = kc.makeApiClient(AppsV1Api);
  const redis: PrivateRedis = await startPrivateRedis();
  const cc = await startFakeCc({ rejectRepeats: true });
  const apiPort = await freePort();
  const base = `http://127.0.0.1:${apiPort}`;
  const env: Record<string, string> = {
    REDIS_URL: redis.url,
    OPI_QUEUE_PREFIX: 'chaos',
    OPI_NAMESPACE: NAMESPACE,
    OPI_RESYNC_INTERVAL_MS: String(SYNC_MS),
    OPI_JOB_LOCK_MS: '10000',
    OPI_WORKER_CONCURRENCY: '8',
    OPI_SHUTDOWN_TIMEOUT_MS: '2000',
    OPI_METRICS_PORT: '0',
    CC_INTERNAL_URL: cc.url,
    // Reports must outlive CC's outage: 40 tries from 200 ms (doubling, with jitter) span hours.
    OPI_CALLBACK_ATTEMPTS: '40',
    OPI_CALLBACK_BACKOFF_MS: '200',
    OPI_CALLBACK_TIMEOUT_MS: '5000',
    LOG_LEVEL: process.env['CHAOS_LOG_LEVEL'] ?? 'warn',
  };
  const api = spawnService('api', 'api', { ...env, PORT: String(apiPort), HOST: '127.0.0.1' }, logDir);
  const workers: ServiceProcess[] = [];
  let workerNo = 0;
  const addWorker = () => {
    workers.push(
      spawnService('worker', `worker-${++workerNo}`, { ...env, KUBECONFIG: kubeconfigFile }, logDir),
    );
  };
  for (let i = 0; i < WORKERS; i++) addWorker();

  const stats = { workerKills: 0, redisRestarts: 0, redisFlushes: 0, ccDownMs: 0, passes: 0, aofLost: 0 };
  /** Tasks CC had handed over (202) that GET /tasks later no longer listed, unreported: CC re-submitted them. */
  const vanished = new Set<string>();
  /** When each worker SIGKILL was sent. */
  const killedAt: number[] = [];
  let stopAll = false;
  const pending: Promise<void>[] = [];

  try {
    for (let i = 0; i < 200 && (await request(base, 'GET', '/apps')).status === 0; i++) await sleep(100);

    // --- CC's model -------------------------------------------------------------------------------
    const model: AppModel[] = Array.from({ length: APPS }, (_, i) => {
      const guid = uuid(i, `a${seed}`);
      const version = uuid(i, `b${seed}`);
      return {
        guid,
        version,
        pg: `${guid}-${version}`,
        wanted: 'running',
        instances: 1 + Math.floor(ccRand() * 2),
        annotation: '1000.000001',
        image: 'registry.example/app:1',
      };
    });
    const tasks: TaskModel[] = Array.from({ length: TASKS }, (_, i) => ({
      guid: uuid(i, `c${seed}`),
      created: false,
      accepted: false,
      fails: ccRand() < 0.1,
      runMs: 200 + Math.floor(ccRand() * 4000),
      posts: 0,
    }));
    let updates = 0;

    /** A change CC's users make: scale, new annotation, sometimes a new image; or stop the app. */
    const mutate = () => {
      for (let k = 0; k < 6; k++) {
        const a = model[Math.floor(ccRand() * model.length)];
        if (!a || a.wanted === 'stopped') continue;
        if (ccRand() < 0.25) {
          a.wanted = 'stopped';
        } else {
          a.instances = 1 + Math.floor(ccRand() * 3);
          a.annotation = `${2000 + ++updates}.000001`;
          if (ccRand() < 0.3) a.image = `registry.example/app:${2 + Math.floor(ccRand() * 3)}`;
        }
      }
      for (let k = 0; k < Math.ceil(TASKS / 20); k++) {
        const t = tasks.find((x) => !x.created);
        if (t) t.created = true;
      }
    };

    /** One pass of CC's convergence loop: make the OPI's view match the model; retry what failed. */
    const pass = async () => {
      stats.passes++;
      const r = await request(base, 'GET', '/apps');
      if (r.status === 200) {
        const infos = new Map(
          (
            JSON.parse(r.text) as {
              desired_lrp_scheduling_infos: {
                desired_lrp_key: { process_guid: string };
                annotation: string;
              }[];
            }
          ).desired_lrp_scheduling_infos.map((s) => [s.desired_lrp_key.process_guid, s.annotation]),
        );
        const known = new Set(model.map((a) => a.pg));
        const work: (() => Promise<unknown>)[] = [];
        for (const a of model) {
          if (a.wanted === 'running') {
            const ann = infos.get(a.pg);
            if (ann === undefined) work.push(() => request(base, 'PUT', `/apps/${a.pg}`, desireBody(a)));
            else if (ann !== a.annotation) {
              work.push(() =>
                request(base, 'POST', `/apps/${a.pg}`, {
                  guid: a.guid,
                  version: a.version,
                  update: { instances: a.instances, annotation: a.annotation, image: a.image },
                }),
              );
            }
          } else if (infos.has(a.pg)) {
            work.push(() => request(base, 'PUT', `/apps/${a.guid}/${a.version}/stop`));
          }
        }
        for (const pg of infos.keys()) {
          if (!known.has(pg))
            work.push(() => request(base, 'PUT', `/apps/${pg.slice(0, 36)}/${pg.slice(37)}/stop`));
        }
        await pool(work, 16, async (w) => {
          await w();
        });
      }
      // Tasks: (re-)submit what CC created and the OPI neither lists nor has reported. Listing first, then
      // reading the callbacks, so a task reported in between is seen as reported.
      const t = await request(base, 'GET', '/tasks');
      if (t.status !== 200) return;
      const listed = new Set((JSON.parse(t.text) as { guid: string }[]).map((x) => x.guid));
      const got = deliveries(cc);
      const todo = tasks.filter((x) => x.created && !listed.has(x.guid) && !got.has(x.guid));
      await pool(todo, 8, async (x) => {
        if (x.accepted) vanished.add(x.guid);
        x.posts++;
        const body = taskBody(cc.url, x.guid, taskEnv(x));
        x.accepted = (await request(base, 'POST', `/tasks/${x.guid}`, body)).status === 202;
      });
    };

    // --- the chaos plan ---------------------------------------------------------------------------
    let redisChain = Promise.resolve();
    const onRedis = (fn: () => Promise<void>) => {
      const p = redisChain.then(fn, fn);
      redisChain = p.catch(() => undefined);
      return p;
    };
    const execute = async (a: ChaosAction): Promise<void> => {
      switch (a.kind) {
        case 'kill-worker': {
          const live = workers.filter(alive);
          const victim = live[Math.floor(a.pick * live.length)];
          if (!victim) return;
          killedAt.push(Date.now());
          await kill(victim);
          stats.workerKills++;
          say(`SIGKILL ${victim.name}`);
          await sleep(a.respawnAfterMs);
          if (!stopAll) addWorker();
          return;
        }
        case 'redis-restart':
          return onRedis(async () => {
            // A canary written just before the kill must come back from the AOF.
            const canary = `chaos-canary-${stats.redisRestarts}`;
            await redis.withClient((c) => c.set(canary, 'alive'));
            await redis.kill();
            say(`redis SIGKILLed, down ${Math.round(a.downMs)} ms`);
            await sleep(a.downMs);
            await redis.start();
            stats.redisRestarts++;
            if ((await redis.withClient((c) => c.get(canary))) !== 'alive') stats.aofLost++;
          });
        case 'redis-flush':
          return onRedis(async () => {
            await redis.flushAll();
            stats.redisFlushes++;
            say('redis FLUSHALL');
          });
        case 'faults':
          sim.faults.reset();
          sim.faults.set(a.config);
          say(`cluster faults: ${a.label}`);
          return;
        case 'cut-watches':
          say(`cut ${sim.faults.cutWatches()} watches`);
          return;
        case 'cc-down': {
          say(`CC down for ${a.ms} ms (refusing, then 503)`);
          const t0 = Date.now();
          await cc.down();
          await sleep(a.ms * 0.6);
          await cc.up();
          cc.answer(503, { body: { description: 'unavailable' } });
          await sleep(a.ms * 0.4);
          cc.answer();
          stats.ccDownMs += Date.now() - t0;
          say('CC back');
          return;
        }
      }
    };

    const actions = plan(rand);
    const chaosStart = Date.now();
    const scheduler = (async () => {
      for (const a of actions) {
        const wait = chaosStart + a.at - Date.now();
        if (wait > 0) await sleep(wait);
        pending.push(
          execute(a).catch((err: unknown) => {
            say(`chaos action ${a.kind} failed: ${String(err)}`);
          }),
        );
      }
    })();

    // The CC-like loop during the chaos: users change things, CC converges.
    mutate();
    while (Date.now() - chaosStart < CHAOS_MS) {
      await pass();
      mutate();
      for (const w of workers) {
        if (w.unexpectedExit !== undefined && !w.killedByUs) {
          say(`${w.name} exited by itself (${w.unexpectedExit}): ${logTail(w, 5)}`);
          w.killedByUs = true;
          addWorker();
        }
      }
      await sleep(1500);
    }
    for (const t of tasks) t.created = true;
    await scheduler;
    stopAll = true;

    // --- heal, then converge ----------------------------------------------------------------------
    sim.faults.reset();
    say('chaos over: cluster faults off; CC keeps converging while the outage/restarts still running end');
    let settled = false;
    void Promise.all(pending).then(() => {
      settled = true;
    });
    while (!settled) {
      await pass();
      await sleep(1500);
    }
    if (!redis.running()) await redis.start();
    await cc.up();
    cc.answer();
    while (workers.filter(alive).length < WORKERS) addWorker();
    if (!alive(api)) throw new Error(`the API died: ${api.unexpectedExit ?? ''}\n${logTail(api)}`);

    const deadline = Date.now() + CONVERGE_TIMEOUT_MS;
    let c = await count(seed, model, tasks, cc, appsApi, killedAt);
    let lastReport = Date.now();
    while (!converged(c) && Date.now() < deadline) {
      await pass();
      await sleep(2000);
      c = await count(seed, model, tasks, cc, appsApi, killedAt);
      if (Date.now() - lastReport > 30_000) {
        lastReport = Date.now();
        say(
          `converging: lost ${c.lost}, wrong spec ${c.wrongSpec}, leftover ${c.leftover}, missing callbacks ${c.missing}`,
        );
      }
    }
    // Late duplicates: several more syncs and report retries get their chance.
    await sleep(8 * SYNC_MS);
    await pass();
    c = await count(seed, model, tasks, cc, appsApi, killedAt);

    const deployed = await clusterDeployments(appsApi);
    for (const a of model) {
      const d = deployed.get(a.pg)?.[0];
      if (a.wanted !== 'running' || !d) continue;
      if (d.replicas === a.instances && d.image === a.image && d.annotation === a.annotation) continue;
      const rec = await request(base, 'GET', `/apps/${a.guid}/${a.version}`);
      say(
        `wrong spec ${a.pg}: CC wants ${a.instances} × ${a.image} @ ${a.annotation}; the Deployment has` +
          ` ${d.replicas} × ${d.image} @ ${d.annotation}; GET /apps/:guid/:version ${rec.status} ${rec.text}`,
      );
    }
    // Each repeated completion with its timeline and the log lines that name it, in the failure's diff
    // (CI shows only the end of the output).
    const since = (ms: number | undefined) => `+${(((ms ?? started) - started) / 1000).toFixed(1)}s`;
    const repeats: string[] = [];
    const delivered = deliveries(cc);
    for (const t of tasks.filter((x) => (delivered.get(x.guid) ?? 0) > 1)) {
      const answers = cc.calls
        .filter((call) => call.path === `/internal/v4/tasks/${t.guid}/completed`)
        .map((call) => `${String(call.status)}@${since(call.answeredAt)}`);
      const logged = await linesNaming(logDir, t.guid);
      repeats.push(
        `${t.guid}: CC re-submitted ${t.posts - 1}×; answers ${answers.join(' ')}; SIGKILLs at` +
          ` ${killedAt.map(since).join(' ')}; ${logged.join(' | ')}`,
      );
    }
    for (const r of repeats) say(`repeated completion ${r}`);
    // Each task CC never heard of, with the log lines that name it.
    for (const t of tasks.filter((x) => x.created && !delivered.has(x.guid))) {
      say(
        `missing completion ${t.guid}: posted ${t.posts}×; ${(await linesNaming(logDir, t.guid)).join(' | ')}`,
      );
    }
    const secs = ((Date.now() - started) / 1000).toFixed(0);
    const apiDied = api.unexpectedExit !== undefined;
    const selfExits = workers.filter((w) => w.unexpectedExit !== undefined && !w.killedByUs).length;
    say(
      [
        `RESULT seed=${seed} (${secs}s)`,
        `  apps:  desired ${c.desired}, present-correct ${c.presentCorrect}, lost ${c.lost}, wrong spec ${c.wrongSpec},` +
          ` stopped ${c.stopped}, leftover ${c.leftover}, duplicate Deployments ${c.duplicateDeployments},` +
          ` unknown Deployments ${c.unknownDeployments}`,
        `  tasks: ${c.tasks}, callbacks once ${c.callbacksOnce}, missing ${c.missing}, duplicated ${c.duplicated},` +
          ` repeated after a worker's SIGKILL ${c.repeatedAfterKill},` +
          ` callbacks for unknown tasks ${c.unknownCallbacks}, vanished from GET /tasks and re-submitted ${vanished.size}`,
        `  chaos: worker SIGKILLs ${stats.workerKills}, Redis restarts ${stats.redisRestarts}, Redis flushes` +
          ` ${stats.redisFlushes}, writes the AOF lost ${stats.aofLost}, CC down ${Math.round(stats.ccDownMs / 1000)}s, cluster errors` +
          ` ${sim.faults.injected.errors}, drops ${sim.faults.injected.drops}, conflicts` +
          ` ${sim.faults.injected.conflicts}, watches cut ${sim.faults.injected.watchesCut}, CC passes ${stats.passes},` +
          ` API died ${apiDied}, workers exited by themselves ${selfExits}`,
      ].join('\n'),
    );
    expect({
      lost: c.lost,
      wrongSpec: c.wrongSpec,
      leftover: c.leftover,
      duplicateDeployments: c.duplicateDeployments,
      unknownDeployments: c.unknownDeployments,
      missing: c.missing,
      duplicated: c.duplicated === 0 ? 0 : repeats,
      unknownCallbacks: c.unknownCallbacks,
      apiDied,
      aofLost: stats.aofLost,
    }).toEqual({
      lost: 0,
      wrongSpec: 0,
      leftover: 0,
      duplicateDeployments: 0,
      unknownDeployments: 0,
      missing: 0,
      duplicated: 0,
      unknownCallbacks: 0,
      apiDied: false,
      aofLost: 0,
    });
  } finally {
    stopAll = true;
    await Promise.allSettled(pending);
    await Promise.all([kill(api, 'SIGKILL'), ...workers.map((w) => kill(w, 'SIGKILL'))]);
    await cc.close();
    await redis.close();
    await sim.close();
  }
}

describe('chaos', () => {
  for (const seed of SEEDS) {
    it(
      `seed ${seed}: nothing lost, nothing duplicated`,
      () => runSeed(seed),
      CHAOS_MS + CC_DOWN_MS + CONVERGE_TIMEOUT_MS + 120_000,
    );
  }
});

// ---------------------------------------------------------------------------------------------------
// The cache writer under chaos. One worker holds the Lease, watches the cluster and writes the instances
// cache; here the periodic sync is ten minutes away, so only the watch keeps /instances fresh. Four faults
// in turn, with a CC-like load (scaling, tasks, deleted pods) and three crash-looping apps throughout:
// watches cut again and again, a compaction storm (410s: every kind relists), the Lease holder
// SIGKILLed, and the next holder SIGSTOPped past its Lease and then resumed. After each: no LRP lost (its
// pods, exactly, in the cache and /instances), no report to CC twice, no stale write accepted (the fence
// is the current holder's term, the watch status is the holder's), and a pod deleted right after the
// fault has its replacement in /instances within 30 s.

const CACHE_APPS = num('CHAOS_CACHE_APPS', 40);
const CACHE_CRASHING = 3;
const CACHE_FAULT_MS = num('CHAOS_CACHE_FAULT_MS', 15_000);
/** Freshness must be back this long after a fault (the Lease here: 6 s, renew deadline 4 s). */
const FRESH_MS = 30_000;
const LEASE_NAME = 'opi-cache-writer';
const CACHE_PREFIX = 'cachechaos';

interface CacheApp {
  guid: string;
  version: string;
  pg: string;
  instances: number;
  annotation: string;
  crash: boolean;
}

interface CachedEntry {
  instances: { index: number; podName: string; state: string }[];
}

interface InstancesAnswer {
  instances: { index: number; state: string }[];
}

/** Each report CC took (answered below 500) more than once: task completions and crash reports. */
function repeatedReports(cc: FakeCc): string[] {
  const seen = new Map<string, number>();
  for (const c of cc.calls) {
    if (c.status === undefined || c.status >= 500) continue;
    const task = /^\/internal\/v4\/tasks\/([^/]+)\/completed$/.exec(c.path)?.[1];
    const crashed = /^\/internal\/v4\/apps\/([^/]+)\/crashed$/.exec(c.path)?.[1];
    const body = c.body as { instance?: string; crash_count?: number } | undefined;
    const key = task
      ? `task ${task}`
      : crashed
        ? `crash ${crashed} ${body?.instance ?? ''} #${body?.crash_count ?? ''}`
        : undefined;
    if (key) seen.set(key, (seen.get(key) ?? 0) + 1);
  }
  return [...seen].filter(([, n]) => n > 1).map(([k, n]) => `${k} × ${n}`);
}

function crashReports(cc: FakeCc): number {
  return cc.calls.filter((c) => c.path.endsWith('/crashed') && c.status === 200).length;
}

/** A Prometheus text page as `name{labels}` → value. */
function parseMetrics(text: string): Map<string, number> {
  const out = new Map<string, number>();
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    const at = line.lastIndexOf(' ');
    out.set(line.slice(0, at), Number(line.slice(at + 1)));
  }
  return out;
}

/** The sum of a metric's series whose labels include every `name="value"` given. */
function sumOf(m: Map<string, number>, name: string, labels: string[] = []): number {
  let n = 0;
  for (const [k, v] of m) if (k.startsWith(`${name}{`) && labels.every((l) => k.includes(l))) n += v;
  return n;
}

/**
 * /instances shows each of the LRP's pods (RUNNING unless it crash-loops); the indexes a scale-down left
 * free below the instance count show as UNCLAIMED, as the API answers them.
 */
function instancesShown(a: CacheApp, rows: InstancesAnswer['instances']): boolean {
  const claimed = rows.filter((i) => i.state !== 'UNCLAIMED');
  return claimed.length === a.instances && (a.crash || claimed.every((i) => i.state === 'RUNNING'));
}

class CacheChaos {
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
      OPI_CALLBACK_ATTEMPTS: '40',
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
      const body = {
        ...desireBody({ ...a, wanted: 'running', image: 'registry.example/app:1' }),
        environment: env,
      };
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
      kinds: ['deployments', 'jobs', 'pods', 'statefulsets'],
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

describe('chaos: the cache writer', () => {
  const c = new CacheChaos();
  beforeAll(() => c.start(), 180_000);
  afterAll(() => c.close(), 60_000);

  it(
    'watches cut again and again',
    () =>
      c.phase('watches cut', async () => {
        let cut = 0;
        for (const end = Date.now() + CACHE_FAULT_MS; Date.now() < end;) {
          const r = await request(c.sim.httpUrl, 'POST', '/sim/watches/cut', undefined, c.sim.token);
          cut += (JSON.parse(r.text) as { cut: number }).cut;
          await sleep(1000);
        }
        c.say(`watches cut: ${cut}`);
        expect(cut).toBeGreaterThan(0);
      }),
    180_000,
  );

  it('a compaction storm: every re-watch meets 410 and relists', async () => {
    const { sp } = await c.holder();
    const expired = async () =>
      sumOf((await c.metrics(sp)) ?? new Map<string, number>(), 'opi_watch_relists_total', [
        'reason="expired"',
      ]);
    const before = await expired();
    await c.phase('compaction storm', async () => {
      for (const end = Date.now() + CACHE_FAULT_MS; Date.now() < end;) {
        await request(c.sim.httpUrl, 'POST', '/sim/compact', undefined, c.sim.token);
        await request(c.sim.httpUrl, 'POST', '/sim/watches/cut', undefined, c.sim.token);
        await sleep(1500);
      }
    });
    const relists = (await expired()) - before;
    c.say(`compaction storm: ${relists} relists after 410`);
    expect(relists).toBeGreaterThan(0);
  }, 180_000);

  it('the Lease holder SIGKILLed', async () => {
    const before = await c.holder();
    await c.phase('holder SIGKILLed', async () => {
      await sleep(2000);
      await kill(before.sp);
      c.say(`SIGKILL ${before.sp.name}, the holder (term ${before.token})`);
      // A pod deleted while nobody holds the Lease: its replacement shows once another worker took over.
      const probe = c.expectFresh('right after the SIGKILL');
      await sleep(1000);
      await c.addWorker();
      await probe;
    });
    const after = await c.holder();
    expect(after.token).toBeGreaterThan(before.token);
    expect(after.sp).not.toBe(before.sp);
  }, 180_000);

  it('the next holder SIGSTOPped past its Lease, then resumed', async () => {
    const paused = await c.holder();
    let next: { identity: string; token: number } | undefined;
    await c.phase('holder paused', async () => {
      await sleep(2000);
      freeze(paused.sp, true);
      c.say(`SIGSTOP ${paused.sp.name}, the holder (term ${paused.token})`);
      try {
        // The others take the Lease after its duration, list and write; meanwhile the load goes on, so
        // what the frozen one holds in memory goes stale.
        next = await c.holder(paused.identity);
        await sleep(3000);
      } finally {
        freeze(paused.sp, false);
      }
      c.say(`SIGCONT ${paused.sp.name}; ${next ? `the Lease is in term ${next.token}` : ''}`);
      // Whatever it still had to write is refused: the watch status and the fence stay the new holder's.
      for (const end = Date.now() + 4000; Date.now() < end;) {
        await c.expectHoldersWrites();
        await sleep(200);
      }
    });
    const refused = logTail(paused.sp, 1000)
      .split('\n')
      .filter((l) => l.includes('refused: a newer leader wrote')).length;
    c.say(`the resumed worker's writes refused by the fence: ${refused}`);
    expect(next!.token).toBeGreaterThan(paused.token);
    expect((await c.holder()).sp).not.toBe(paused.sp);
    // It stepped down, and lives on as a worker.
    await eventually(
      async () => (await c.metrics(paused.sp))?.get('opi_cache_writer') === 0,
      'the resumed worker to step down',
    );
    expect(alive(paused.sp)).toBe(true);
    await c.expectTasksReported();
  }, 180_000);
});
