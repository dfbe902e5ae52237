/**
 * The convergence baseline: creates the workloads (BENCH_KIND) of LRPs straight through client-node, BENCH_CONCURRENCY
 * at a time, in its own process as the workers are. It stays up for several rounds (client-node takes
 * seconds to load): each line `{"count": n}` on stdin is a round of n new LRPs, whose bodies are built
 * with the same translation the workers use before the clock starts; it answers `{"elapsedMs": t}`.
 */
import { createInterface } from 'node:readline';
import { AppsV1Api, KubeConfig, type V1Deployment, type V1StatefulSet } from '@kubernetes/client-node';
import { lrpToDeployment, lrpToStatefulSet } from '@opi/translation';
import { uuid } from '@opi/contract/testing';
import { desiredLrp } from './bodies.js';
import { inLanes } from './common.js';

const concurrency = Number(process.env['BENCH_CONCURRENCY'] ?? 64);
const namespace = process.env['BENCH_NAMESPACE'] ?? 'cf-workloads';
const salt = process.env['BENCH_SALT'] ?? 'd0';
/** `deployment` or `statefulset`: what the workers of the other side create. */
const statefulSets = process.env['BENCH_KIND'] === 'statefulset';

const kc = new KubeConfig();
kc.loadFromDefault();
const apps = kc.makeApiClient(AppsV1Api);
let made = 0;

async function round(count: number): Promise<number> {
  const bodies = Array.from({ length: count }, () => {
    const lrp = desiredLrp(uuid(made++, salt), namespace);
    return statefulSets
      ? (lrpToStatefulSet(lrp, { runAsNonRoot: true, instanceIndexEnv: true }) as V1StatefulSet)
      : (lrpToDeployment(lrp, { runAsNonRoot: true }) as V1Deployment);
  });
  const started = performance.now();
  await inLanes(bodies, concurrency, async (body) => {
    if (statefulSets) await apps.createNamespacedStatefulSet({ namespace, body: body as V1StatefulSet });
    else await apps.createNamespacedDeployment({ namespace, body: body });
  });
  return performance.now() - started;
}

process.stdout.write(`${JSON.stringify({ ready: true })}\n`);
for await (const line of createInterface({ input: process.stdin })) {
  const { count } = JSON.parse(line) as { count: number };
  process.stdout.write(`${JSON.stringify({ elapsedMs: await round(count) })}\n`);
}
