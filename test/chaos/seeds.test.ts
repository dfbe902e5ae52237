/**
 * Seeded chaos runs: the API and workers as processes, a private Redis with AOF and the simulated cluster
 * under a CC-like convergence loop while each seed's plan injects faults; once healed, nothing is lost and
 * nothing duplicated.
 */
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { AppsV1Api, KubeConfig } from '@kubernetes/client-node';
import { FAST_BEHAVIOUR, type Simulator, startSimulator } from '@opi/kube-sim';
import { startFakeCc } from '../support/fake-cc.js';
import { executor } from './actions.js';
import { ccLoop } from './cc-loop.js';
import { CC_DOWN_MS, CHAOS_MS, CONVERGE_TIMEOUT_MS, NAMESPACE, SEEDS, SYNC_MS, WORKERS } from './config.js';
import { converged, count } from './counting.js';
import { request, sleep } from './http.js';
import { plan } from './plan.js';
import { type ServiceProcess, alive, kill, logTail, spawnService } from './processes.js';
import { mulberry32 } from './prng.js';
import { type PrivateRedis, freePort, startPrivateRedis } from './redis-server.js';
import { report } from './report.js';

/**
 * One seed's run: a CC-like convergence loop over hundreds of apps and tasks while the seed's plan
 * SIGKILLs workers, SIGKILLs and restarts Redis, flushes Redis once, makes the cluster slow, answer
 * 500/503/429, drop connections and cut watches, and takes CC's callback endpoint down for a minute or
 * more. Then everything is healed and the run waits for convergence and counts: every desired app
 * with the right spec, every stopped one gone, every task's callback exactly once, nothing duplicated.
 * One repeat is inherent to at-least-once delivery and is counted apart: a worker SIGKILLed between CC's
 * answer and its record of it (CC answers the repeat 400). Logs of every process stay in the temporary
 * directory printed with the counts.
 */
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
    // Reports outlive CC's outage: retried for 24 h (the default window), at most 30 s apart.
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
  /** When each worker SIGKILL was sent. */
  const killedAt: number[] = [];
  let stopAll = false;
  const pending: Promise<void>[] = [];

  try {
    for (let i = 0; i < 200 && (await request(base, 'GET', '/apps')).status === 0; i++) await sleep(100);

    // --- CC's model and its convergence loop ---------------------------------------------------
    const loop = ccLoop(seed, ccRand, base, cc, stats);
    const { model, tasks, mutate, pass } = loop;

    // --- the chaos plan ---------------------------------------------------------------------------
    const execute = executor({
      workers,
      addWorker,
      stopped: () => stopAll,
      killedAt,
      stats,
      redis,
      sim,
      cc,
      say,
    });

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

    const { repeats, apiDied } = await report(
      { seed, started, say, base, logDir, appsApi, cc, sim, api, workers, loop, stats, killedAt },
      c,
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
