/**
 * The chaos suite (`npm run test:chaos`): the API and worker processes, a private Redis with AOF and the
 * simulated cluster, driven by a CC-like convergence loop over hundreds of apps and tasks while a seeded
 * plan SIGKILLs workers, SIGKILLs and restarts Redis, flushes Redis once, makes the cluster slow, answer
 * 500/503/429, drop connections and cut watches, and takes CC's callback endpoint down for a minute or
 * more. Then everything is healed and the suite waits for convergence and counts: every desired app
 * with the right spec, every stopped one gone, every task's callback exactly once, nothing duplicated.
 *
 * CHAOS_SEEDS=1,2,3 (default) replays plans; CHAOS_APPS, CHAOS_TASKS, CHAOS_DURATION_MS, CHAOS_CC_DOWN_MS
 * size them. Logs of every process stay in the temporary directory printed with the counts.
 */
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { AppsV1Api, KubeConfig } from '@kubernetes/client-node';
import { FAST_BEHAVIOUR, type FaultConfig, type Simulator, startSimulator } from '@opi/kube-sim';
import { type FakeCc, startFakeCc } from '../support/fake-cc.js';
import { type ServiceProcess, alive, kill, logTail, spawnService } from './processes.js';
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
): Promise<{ status: number; text: string }> {
  try {
    const res = await fetch(`${base}${path}`, {
      method,
      signal: AbortSignal.timeout(15_000),
      ...(body === undefined
        ? {}
        : { body: JSON.stringify(body), headers: { 'content-type': 'application/json' } }),
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

function taskBody(cc: FakeCc, t: TaskModel): Record<string, unknown> {
  const env: Record<string, string> = { KUBESIM_RUN_MS: String(t.runMs) };
  if (t.fails) Object.assign(env, { KUBESIM_BEHAVIOUR: 'fail', KUBESIM_EXIT_CODE: '3' });
  return {
    name: `task-${t.guid.slice(-6)}`,
    app_guid: 'app-1',
    app_name: 'app',
    org_guid: 'org-1',
    org_name: 'org',
    space_guid: 'space-1',
    space_name: 'dev',
    completion_callback: `${cc.url}/internal/v4/tasks/${t.guid}/completed`,
    environment: Object.entries(env).map(([name, value]) => ({ name, value })),
    lifecycle: {
      docker_lifecycle: { image: 'registry.example/task:1', command: ['/bin/sh', '-c', 'echo hi'] },
    },
    memory_mb: 64,
    disk_mb: 128,
    cpu_weight: 1,
  };
}

/** Completion callbacks CC processed (answered below 500), by task guid; the path names the task. */
function deliveries(cc: FakeCc): Map<string, number> {
  const out = new Map<string, number>();
  for (const c of cc.calls) {
    const m = /^\/internal\/v4\/tasks\/([^/]+)\/completed$/.exec(c.path);
    if (!m?.[1] || c.status === undefined || c.status >= 500) continue;
    out.set(m[1], (out.get(m[1]) ?? 0) + 1);
  }
  return out;
}

type ChaosAction =
  | { at: number; kind: 'kill-worker'; pick: number; respawnAfterMs: number }
  | { at: number; kind: 'redis-restart'; downMs: number }
  | { at: number; kind: 'redis-flush' }
  | { at: number; kind: 'faults'; config: Partial<FaultConfig>; label: string }
  | { at: number; kind: 'cut-watches' }
  | { at: number; kind: 'cc-down'; ms: number };

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
): Promise<Counts> {
  const deps = await clusterDeployments(apps);
  const got = deliveries(cc);
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
    const n = got.get(g) ?? 0;
    if (n === 0) c.missing++;
    else if (n === 1) c.callbacksOnce++;
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
        x.accepted = (await request(base, 'POST', `/tasks/${x.guid}`, taskBody(cc, x))).status === 202;
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
    let c = await count(seed, model, tasks, cc, appsApi);
    let lastReport = Date.now();
    while (!converged(c) && Date.now() < deadline) {
      await pass();
      await sleep(2000);
      c = await count(seed, model, tasks, cc, appsApi);
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
    c = await count(seed, model, tasks, cc, appsApi);

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
    const got = deliveries(cc);
    for (const t of tasks.filter((x) => (got.get(x.guid) ?? 0) > 1)) {
      const statuses = cc.calls
        .map((call, i) => ({ call, i }))
        .filter(({ call }) => call.path === `/internal/v4/tasks/${t.guid}/completed`)
        .map(({ call, i }) => `#${i}:${String(call.status)}`);
      say(`duplicated ${t.guid}: posts ${t.posts}, callbacks ${statuses.join(' ')}`);
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
      duplicated: c.duplicated,
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
