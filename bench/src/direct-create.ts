/**
 * The convergence baseline: creates the Deployments of BENCH_COUNT LRPs straight through client-node,
 * BENCH_CONCURRENCY at a time, in its own process as the workers are. Builds each body with the same
 * translation the workers use before the clock starts, then prints `{"elapsedMs": n}` on stdout.
 */
import { AppsV1Api, KubeConfig, type V1Deployment } from '@kubernetes/client-node';
import { desireLrpSchema, toDesiredLrp } from '@opi/contract';
import { lrpToDeployment } from '@opi/translation';
import { desireBody, uuid } from './bodies.js';

const count = Number(process.env['BENCH_COUNT'] ?? 1000);
const concurrency = Number(process.env['BENCH_CONCURRENCY'] ?? 64);
const namespace = process.env['BENCH_NAMESPACE'] ?? 'cf-workloads';
const salt = process.env['BENCH_SALT'] ?? 'd0';

const kc = new KubeConfig();
kc.loadFromDefault();
const apps = kc.makeApiClient(AppsV1Api);
const bodies = Array.from({ length: count }, (_, n) => {
  const lrp = toDesiredLrp(desireLrpSchema.parse(desireBody(uuid(n, salt), 'v1')), {
    namespace,
    dropletRegistry: 'registry.example',
  });
  return lrpToDeployment(lrp, { runAsNonRoot: true }) as V1Deployment;
});

const started = performance.now();
let next = 0;
async function lane(): Promise<void> {
  while (next < bodies.length) {
    const body = bodies[next++];
    if (body) await apps.createNamespacedDeployment({ namespace, body });
  }
}
await Promise.all(Array.from({ length: concurrency }, lane));
process.stdout.write(`${JSON.stringify({ elapsedMs: performance.now() - started })}\n`);
