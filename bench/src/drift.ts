/**
 * The drift scenario: an app's Deployment deleted by hand (as kubectl would, over HTTP) until it is back
 * with its pods ready, through the watch's repair alone (the periodic sync an hour away), against the
 * cluster's own floor: one of its pods deleted until the ReplicaSet's replacement is ready. Both on a
 * simulated cluster with its default pacing (a pod is ready about a second after it is made).
 */
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { AppsV1Api, CoreV1Api, KubeConfig } from '@kubernetes/client-node';
import { Redis } from 'ioredis';
import { type KubeObject, type Simulator, startSimulator } from '@opi/kube-sim';
import { uuid } from '@opi/contract/testing';
import { desireBody } from './bodies.js';
import { NAMESPACE, REDIS_URL, log, percentile, pollUntil } from './common.js';
import { quick } from './options.js';
import { type Child, stopChild } from './processes.js';
import type { Row } from './report.js';
import { deletePrefix, startApi, startWorker, uniquePrefix } from './service.js';

/** Tries of each side (alternating), and the app's instances. */
const TRIES = quick ? 10 : 20;
const INSTANCES = 2;
const TIMEOUT_MS = 30_000;

function isReady(p: KubeObject): boolean {
  const conditions = (p['status'] as { conditions?: { type: string; status: string }[] } | undefined)
    ?.conditions;
  return (
    !p.metadata.deletionTimestamp && (conditions ?? []).some((c) => c.type === 'Ready' && c.status === 'True')
  );
}

export async function drift(results: string): Promise<Row[]> {
  const sim: Simulator = await startSimulator({ namespaces: [NAMESPACE], seed: 17 });
  const kubeconfig = join(results, 'drift-kubeconfig.yaml');
  await writeFile(kubeconfig, sim.kubeconfig());
  const kc = new KubeConfig();
  kc.loadFromString(sim.kubeconfig());
  const apps = kc.makeApiClient(AppsV1Api);
  const core = kc.makeApiClient(CoreV1Api);
  const prefix = uniquePrefix('drift');
  const redis = new Redis(REDIS_URL);
  const children: Child[] = [];
  const podType = sim.store.registry.get('', 'pods');
  const deploymentType = sim.store.registry.get('apps', 'deployments');
  try {
    const api = await startApi(prefix, join(results, 'drift-api.log'));
    children.push(api);
    const worker = await startWorker(
      prefix,
      { KUBECONFIG: kubeconfig, OPI_RESYNC_INTERVAL_MS: '3600000' },
      join(results, 'drift-worker.log'),
    );
    children.push(worker);
    const guid = uuid(1, 'drift');
    const body = { ...desireBody(guid, 'v1'), instances: INSTANCES };
    const r = await fetch(`http://127.0.0.1:${api.port}/apps/${guid}-v1`, {
      method: 'PUT',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    if (r.status !== 202) throw new Error(`drift: desire answered ${r.status}`);

    const pods = (): KubeObject[] =>
      sim.store.all(podType, NAMESPACE).filter((p) => p.metadata.labels?.['cloudfoundry.org/guid'] === guid);
    const deployment = (): KubeObject | undefined =>
      sim.store
        .all(deploymentType, NAMESPACE)
        .find((d) => d.metadata.labels?.['cloudfoundry.org/guid'] === guid);
    /** The app whole: its Deployment, and exactly its instances as ready pods none of which is in `old`. */
    const whole = (old: ReadonlySet<string>, deploymentUid?: string): boolean => {
      const d = deployment();
      if (!d || d.metadata.uid === deploymentUid) return false;
      const all = pods();
      const ready = all.filter((p) => isReady(p) && !old.has(p.metadata.uid));
      return ready.length === INSTANCES;
    };
    /** Nothing left terminating, so the next try starts from the app at rest. */
    const atRest = (): Promise<number> =>
      pollUntil(() => Promise.resolve(pods().length === INSTANCES && pods().every(isReady)), TIMEOUT_MS, 20);
    if (Number.isNaN(await atRest())) throw new Error('drift: the app never ran');

    const floor: number[] = [];
    const ours: number[] = [];
    for (let i = 0; i < TRIES; i++) {
      // The floor: one pod deleted, until the ReplicaSet's replacement is ready.
      const gone = pods()[0];
      if (!gone) throw new Error('drift: no pod');
      const before = new Set([gone.metadata.uid]);
      let t0 = performance.now();
      await core.deleteNamespacedPod({ name: gone.metadata.name, namespace: NAMESPACE });
      let done = await pollUntil(() => Promise.resolve(whole(before)), TIMEOUT_MS, 5);
      floor.push(done - t0);
      await atRest();

      // Ours: the Deployment deleted, until it is back with its instances ready.
      const d = deployment();
      if (!d) throw new Error('drift: no Deployment');
      const old = new Set(pods().map((p) => p.metadata.uid));
      t0 = performance.now();
      await apps.deleteNamespacedDeployment({ name: d.metadata.name, namespace: NAMESPACE });
      done = await pollUntil(() => Promise.resolve(whole(old, d.metadata.uid)), TIMEOUT_MS, 5);
      ours.push(done - t0);
      await atRest();
      log(
        `drift try ${i + 1}: pod recreate ${Math.round(floor[i] ?? NaN)} ms, Deployment back ${Math.round(ours[i] ?? NaN)} ms`,
      );
    }
    if ([...floor, ...ours].some(Number.isNaN)) throw new Error('drift: a try did not come back in 30 s');
    const p50 = { ours: percentile(ours, 50), floor: percentile(floor, 50) };
    const p90 = { ours: percentile(ours, 90), floor: percentile(floor, 90) };
    return [
      {
        scenario: 'drift → repaired',
        size: `1 app of ${INSTANCES} instances, ${TRIES} tries each, default pacing`,
        metric: 'Deployment deleted by hand → back, pods ready, p50',
        ours: p50.ours,
        baseline: p50.floor,
        unit: 'ms',
        ratio: p50.ours / p50.floor,
        ratioMeaning: '× the pod recreate',
        target: '≤ 2 s p50',
        met: p50.ours <= 2000,
        note:
          `baseline: a pod deleted → the ReplicaSet's replacement ready; p90 ${Math.round(p90.ours)} ms ` +
          `vs ${Math.round(p90.floor)} ms; no sync runs (OPI_RESYNC_INTERVAL_MS 1 h)`,
      },
    ];
  } finally {
    for (const c of children) await stopChild(c);
    await deletePrefix(redis, prefix);
    redis.disconnect();
    await sim.close();
  }
}
