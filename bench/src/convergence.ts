/**
 * The convergence scenario: desires through the API until the workers have created every workload,
 * against the same workloads created straight through client-node, and 4 workers against 1.
 */
import { spawn } from 'node:child_process';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { Redis } from 'ioredis';
import type { Simulator } from '@opi/kube-sim';
import type { WorkloadKind } from '@opi/domain';
import { uuid } from '@opi/contract/testing';
import { NAMESPACE, REDIS_URL, log, repo, sleep } from './common.js';
import { load, newDesires } from './load.js';
import { plan } from './options.js';
import { type Child, startSideBySide, stopChild } from './processes.js';
import type { Row } from './report.js';
import { deletePrefix, startApi, startSim, startWorker, uniquePrefix } from './service.js';

/** Every request to the simulated cluster takes `ms` from now on. */
function setLatency(sim: Simulator, ms: number): void {
  sim.faults.set({ latencyMs: ms, jitterMs: 0 });
}

/** A fresh simulated cluster whose every request takes `latencyMs`, and its kubeconfig file. */
async function convergenceCluster(
  results: string,
  latencyMs: number,
  name: string,
): Promise<{ sim: Simulator; kubeconfig: string }> {
  const sim = await startSim(NAMESPACE, 12);
  setLatency(sim, latencyMs);
  const kubeconfig = join(results, `${name}-kubeconfig.yaml`);
  await writeFile(kubeconfig, sim.kubeconfig());
  return { sim, kubeconfig };
}

/** One side of the convergence comparison, up for several rounds over a cluster of its own. */
interface Converger {
  /** `count` new LRPs until every Deployment exists; in ms. */
  round(count: number): Promise<number>;
  /** The cluster's round trip from now on. */
  setLatency(ms: number): void;
  close(): Promise<void>;
}

/** How many workloads of the kind the simulated cluster holds. */
function workloadsOf(sim: Simulator, kind: WorkloadKind): { count: () => number } {
  const type = sim.store.registry.get('apps', `${kind}s`);
  return { count: () => sim.store.count(type) };
}

/** The kind's objects as the rows name them. */
const KIND_NAMES: Record<WorkloadKind, string> = { deployment: 'Deployments', statefulset: 'StatefulSets' };

/**
 * The API and `workers` worker processes on their default concurrency. A round sends its desires through
 * the API (autocannon, 64 connections) and waits until every Deployment exists.
 */
async function startConvergenceService(
  results: string,
  workers: number,
  latencyMs: number,
  kind: WorkloadKind,
): Promise<Converger & { keepWorkers(n: number): Promise<void> }> {
  const { sim, kubeconfig } = await convergenceCluster(results, latencyMs, `converge-${kind}`);
  const prefix = uniquePrefix('conv');
  const children: Child[] = [];
  const redis = new Redis(REDIS_URL);
  const close = async (): Promise<void> => {
    for (const c of children) await stopChild(c);
    await deletePrefix(redis, prefix);
    redis.disconnect();
    await sim.close();
  };
  try {
    const api = await startApi(prefix, join(results, `converge-${kind}-api.log`));
    children.push(api);
    const env = { KUBECONFIG: kubeconfig, OPI_WORKLOAD_KIND: kind };
    const started = await startSideBySide(workers, async (i) => {
      const w = await startWorker(prefix, env, join(results, `converge-${kind}-worker-${i}.log`));
      children.push(w);
      return w;
    });
    const deployments = workloadsOf(sim, kind);
    let n = 0;
    return {
      round: async (count) => {
        const target = deployments.count() + count;
        const t0 = performance.now();
        const sent = load({
          url: `http://127.0.0.1:${api.port}`,
          connections: 64,
          amount: count,
          headers: { 'content-type': 'application/json' },
          requests: newDesires(() => uuid(n++, 'c0')),
        });
        while (deployments.count() < target) {
          if (performance.now() - t0 > 600_000) throw new Error('convergence took over 10 minutes');
          await sleep(10);
        }
        const elapsed = performance.now() - t0;
        const desires = await sent;
        if (desires.bad) throw new Error(`convergence: ${desires.bad} desires failed`);
        return elapsed;
      },
      setLatency: (ms) => {
        setLatency(sim, ms);
      },
      keepWorkers: async (keep) => {
        for (const w of started.slice(keep)) await stopChild(w);
      },
      close,
    };
  } catch (err) {
    await close();
    throw err;
  }
}

/** The same Deployments created straight through client-node, `concurrency` at a time (direct-create.ts). */
async function startDirectCreator(
  results: string,
  concurrency: number,
  latencyMs: number,
  kind: WorkloadKind,
): Promise<Converger> {
  const { sim, kubeconfig } = await convergenceCluster(results, latencyMs, `direct-${kind}`);
  const proc = spawn(process.execPath, [join(repo, 'bench/dist/direct-create.js')], {
    env: {
      PATH: process.env['PATH'] ?? '',
      KUBECONFIG: kubeconfig,
      BENCH_CONCURRENCY: String(concurrency),
      BENCH_NAMESPACE: NAMESPACE,
      BENCH_KIND: kind,
    },
    stdio: ['pipe', 'pipe', 'inherit'],
  });
  const lines = createInterface({ input: proc.stdout })[Symbol.asyncIterator]();
  const answer = async (): Promise<Record<string, number>> => {
    const next = await lines.next();
    if (next.done) throw new Error(`direct-create exited with ${String(proc.exitCode ?? proc.signalCode)}`);
    return JSON.parse(next.value) as Record<string, number>;
  };
  const close = async (): Promise<void> => {
    proc.stdin.end();
    if (proc.exitCode === null && proc.signalCode === null) await new Promise((r) => proc.once('exit', r));
    await sim.close();
  };
  try {
    await answer(); // ready
  } catch (err) {
    await close();
    throw err;
  }
  const deployments = workloadsOf(sim, kind);
  return {
    round: async (count) => {
      const target = deployments.count() + count;
      proc.stdin.write(`${JSON.stringify({ count })}\n`);
      const { elapsedMs } = await answer();
      if (deployments.count() !== target) throw new Error('direct-create fell short');
      return elapsedMs ?? NaN;
    },
    setLatency: (ms) => {
      setLatency(sim, ms);
    },
    close,
  };
}

/** LRPs each side desires once before the measured rounds. */
const WARM_UP_LRPS = 100;

/**
 * Two questions, each at its own cluster round trip:
 * - At 50 ms (a loaded API server's create), do 4 workers come near creating the Deployments directly
 *   at the same concurrency? Here the two cores are the limit of both, so it compares the service's
 *   cost per LRP with client-node's alone. Alternating rounds, the median of their ratios: a single
 *   pair moved between 0.7× and 1.06× on a shared machine.
 * - Do workers scale out? That needs a cluster (and machine) that can take what 4 workers send: the
 *   round trip is made long enough that 64 requests in flight ask for at most half the rate the direct
 *   creates reached at 50 ms. Then one worker is bound by its 16 jobs in flight, as in production where
 *   workers are added for exactly that reason; the direct creates at that round trip are measured too,
 *   to show the cluster was not the limit.
 * Both sides stay up throughout (each round desires new LRPs), and the second question reuses them with
 * the round trip changed and, for one worker, three workers stopped: starting processes that load
 * client-node took most of the quick run's time.
 */

export async function convergence(results: string, kind: WorkloadKind): Promise<Row[]> {
  const perWorker = 16; // OPI_WORKER_CONCURRENCY's default
  const concurrency = 4 * perWorker;
  const rate = (count: number, ms: number): number => count / (ms / 1000);
  const nearMs = plan.clusterLatencyMs;
  const [service, direct] = await Promise.all([
    startConvergenceService(results, 4, nearMs, kind),
    startDirectCreator(results, concurrency, nearMs, kind),
  ]);
  const rows: Row[] = [];
  try {
    // A warm-up round each, not counted: the first round of a fresh process ran a third slower on both
    // sides (JIT, connections), and the service is measured as it runs, warm.
    await service.round(WARM_UP_LRPS);
    await direct.round(WARM_UP_LRPS);
    const rounds: { four: number; direct: number }[] = [];
    for (let i = 0; i < plan.convergeRounds; i++) {
      const four = await service.round(plan.convergeCount);
      const d = await direct.round(plan.convergeCount);
      log(
        `${kind}s, round ${i + 1}, ${nearMs} ms: 4 workers ${Math.round(four)} ms, direct creates at ${concurrency} ` +
          `${Math.round(d)} ms`,
      );
      rounds.push({ four, direct: d });
    }
    const ratios = rounds.map((r) => r.direct / r.four);
    const median = [...rounds].sort((a, b) => a.direct / a.four - b.direct / b.four)[
      Math.floor(rounds.length / 2)
    ];
    if (!median) throw new Error('no convergence rounds');
    // ours and baseline as times for the same count: the ratio of rates is baseline time / our time.
    const row = (
      count: number,
      latencyMs: number,
      times: { ours: number; baseline: number },
      what: { metric: string; of: string; min: number; note: string },
    ): Row => ({
      scenario: `convergence: desires → ${KIND_NAMES[kind]}`,
      size: `${count} LRPs, cluster round trip ${latencyMs} ms`,
      metric: what.metric,
      ours: rate(count, times.ours),
      baseline: rate(count, times.baseline),
      unit: 'LRPs/s',
      ratio: times.baseline / times.ours,
      ratioMeaning: `× ${what.of}`,
      target: `≥ ${what.min}× ${what.of}`,
      met: times.baseline / times.ours >= what.min,
      note: what.note,
    });
    rows.push(
      row(
        plan.convergeCount,
        nearMs,
        { ours: median.four, baseline: median.direct },
        {
          metric: `4 workers vs direct creates at ${concurrency}, LRPs/s`,
          of: 'the direct rate',
          min: 0.8,
          note:
            `the median of ${rounds.length} alternating rounds (ratios ${ratios.map((x) => x.toFixed(2)).join(', ')}); ` +
            'ours includes the HTTP desires, the records and the queue; both bound by the 2 cores',
        },
      ),
    );

    const capacity = rate(plan.convergeCount, median.direct);
    const farMs = Math.max(nearMs, Math.ceil((2 * concurrency * 1000) / capacity / 50) * 50);
    const far = plan.scalingCount;
    service.setLatency(farMs);
    direct.setLatency(farMs);
    const fourFar = await service.round(far);
    log(`4 workers at ${farMs} ms: ${Math.round(fourFar)} ms`);
    const directFar = await direct.round(far);
    log(`direct creates at ${concurrency}, ${farMs} ms: ${Math.round(directFar)} ms`);
    await service.keepWorkers(1);
    const one = await service.round(far);
    log(`1 worker at ${farMs} ms: ${Math.round(one)} ms`);
    rows.push(
      row(
        far,
        farMs,
        { ours: fourFar, baseline: one },
        {
          metric: '4 workers vs 1, LRPs/s',
          of: 'one worker',
          min: 2.5,
          note:
            `round trip chosen so ${concurrency} in flight ask ≤ half of the ${Math.round(capacity)}/s direct creates reached ` +
            `at ${nearMs} ms; direct creates at ${concurrency} here: ` +
            `${Math.round(rate(far, directFar))}/s of the ${Math.round((concurrency * 1000) / farMs)}/s ` +
            `that ${concurrency} in flight allow, so the cluster answered in its round trip: not the limit`,
        },
      ),
    );
  } finally {
    await Promise.all([service.close(), direct.close()]);
  }
  return rows;
}
