/**
 * The first list's baseline: the same three collections the cache writer lists (app Deployments, managed
 * pods, task and staging Jobs), paged by 500, at once, through the same adapter, in a process of its own
 * as the worker is, keeping nothing of the objects: the bare cost of fetching and parsing the pages. Reads
 * KUBECONFIG and BENCH_NAMESPACE; prints `{"ms": t, "deployments": n, "pods": n, "jobs": n}`.
 */
import { ClientNodeKubernetes, loadKubeConfig } from '@opi/kube';
import { APP_SELECTOR, JOB_SELECTOR, MANAGED_SELECTOR } from '@opi/translation';

const file = process.env['KUBECONFIG'];
if (!file) throw new Error('KUBECONFIG is not set');
const namespace = process.env['BENCH_NAMESPACE'] ?? 'cf-workloads';
const kube = new ClientNodeKubernetes(loadKubeConfig({ kubeconfigFile: file }));

// Counted, not kept: each object is dropped as its page is read.
let deployments = 0;
let pods = 0;
let jobs = 0;
const started = performance.now();
await Promise.all([
  kube.deployments.list(namespace, APP_SELECTOR, 500, () => {
    deployments++;
    return undefined;
  }),
  kube.pods.list(namespace, MANAGED_SELECTOR, 500, () => {
    pods++;
    return undefined;
  }),
  kube.jobs.list(namespace, JOB_SELECTOR, 500, () => {
    jobs++;
    return undefined;
  }),
]);
const ms = performance.now() - started;
process.stdout.write(`${JSON.stringify({ ms, deployments, pods, jobs })}\n`);
kube.close();
