/**
 * Routing as a CF user meets it, through CF's real gorouter (the realrouter rig): a pod's Ready →
 * its route answering there, and its deletion → gorouter's 404, for the service (watch → cache → emitter
 * → NATS) against the floor of the bench publishing the same registration itself the moment it sees
 * the change in the cluster's store, side by side on the same pod. And the LISTs the worker makes while
 * routing, against Eirini's route collector (a LIST of every pod each 30 s).
 */
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { KubeConfig } from '@kubernetes/client-node';
import { connect } from '@nats-io/transport-node';
import { Redis } from 'ioredis';
import { type KubeObject, startSimulator } from '@opi/kube-sim';
import { type RouterRig, isLoopback, routerRigAvailable, startRouterRig } from '@opi/router-rig';
import { type RouteSource, registrationsOf } from '@opi/translation';
import { uuid } from '@opi/contract/testing';
import { desireBody } from './bodies.js';
import { NAMESPACE, REDIS_URL, log, percentile, pollUntil } from './common.js';
import { countsBetween, describeCounts, requestsOf, startCountingProxy } from './kube-proxy.js';
import { quick } from './options.js';
import { type Child, stopChild } from './processes.js';
import type { Row } from './report.js';
import { deletePrefix, firstListMs, startApi, startWorker, uniquePrefix } from './service.js';

const TRIES = quick ? 10 : 30;
const TIMEOUT_MS = 10_000;
/** Eirini's route collector listed every pod of the namespace this often. */
const EIRINI_LIST_EVERY_S = 30;

interface Sample {
  /** performance.now() of the pod's Ready (or deletionTimestamp) in the cluster's store. */
  at: number;
  ours: number;
  floor: number;
  /** Our message seen by a bare subscriber. */
  seen: number;
}

function isReady(p: KubeObject): boolean {
  const status = p['status'] as { conditions?: { type: string; status: string }[] } | undefined;
  return (status?.conditions ?? []).some((c) => c.type === 'Ready' && c.status === 'True');
}

const podIp = (p: KubeObject): string => (p['status'] as { podIP?: string } | undefined)?.podIP ?? '';

/** A registration of `host` → the pod, as gorouter reads it (the floor's, under an id of its own). */
function floorMessage(host: string, p: KubeObject): string {
  const source: RouteSource = { ports: [[8080, [host]]], desired: 1, app: 'floor', tags: {} };
  const [message] = registrationsOf(source, [
    { ip: podIp(p), uid: `floor-${p.metadata.uid ?? ''}`, index: 0 },
  ]).values();
  if (message === undefined) throw new Error('routing: no registration for the floor');
  return message;
}

export async function routingLatency(results: string): Promise<Row[]> {
  if (!routerRigAvailable()) {
    log('routing through gorouter: skipped (no realrouter rig: set REALROUTER_SCRIPTS, run its prepare.sh)');
    return [];
  }
  const rig: RouterRig = await startRouterRig();
  const sim = await startSimulator({ namespaces: [NAMESPACE], seed: 25 });
  const kc = new KubeConfig();
  kc.loadFromString(sim.kubeconfig());
  const proxy = await startCountingProxy(kc, sim.httpUrl);
  const kubeconfig = join(results, 'routing-kubeconfig.yaml');
  await writeFile(kubeconfig, proxy.kubeconfig(NAMESPACE));
  const prefix = uniquePrefix('routing');
  const redis = new Redis(REDIS_URL);
  const children: Child[] = [];
  const nats = await connect({ servers: rig.natsUrl });
  const podType = sim.store.registry.get('', 'pods');
  try {
    const api = await startApi(prefix, join(results, 'routing-api.log'));
    children.push(api);
    const worker = await startWorker(
      prefix,
      {
        KUBECONFIG: kubeconfig,
        OPI_ROUTING: 'nats',
        OPI_NATS_URL: rig.natsUrl,
        // The cache's periodic resync out of the window: a LIST counted there is routing's.
        OPI_RESYNC_INTERVAL_MS: '3600000',
      },
      join(results, 'routing-worker.log'),
    );
    children.push(worker);
    await firstListMs(worker);
    const base = `http://127.0.0.1:${api.port}`;
    const send = async (method: string, path: string, body?: unknown): Promise<void> => {
      const r = await fetch(`${base}${path}`, {
        method,
        headers: { 'content-type': 'application/json' },
        body: body === undefined ? undefined : JSON.stringify(body),
      });
      if (!r.ok) throw new Error(`routing: ${method} ${path} answered ${r.status}`);
    };

    // Each try's app, by guid: when its pod was Ready or deleted in the store, and when our
    // registration (or unregistration) passed on NATS.
    const watching = new Map<
      string,
      { host: string; ready?: KubeObject; readyAt?: number; goneAt?: number }
    >();
    const seen = new Map<string, number>();
    // A pod address outside 127.0.0.0/8 is never published nor dialled: the run stops at it.
    const outside: string[] = [];
    const unsubscribe = sim.store.subscribe((e) => {
      if (e.resource !== podType) return;
      const guid = e.object.metadata.labels?.['cloudfoundry.org/guid'];
      const w = guid ? watching.get(guid) : undefined;
      if (!w) return;
      if (w.readyAt === undefined && isReady(e.object) && !e.object.metadata.deletionTimestamp) {
        w.readyAt = performance.now();
        w.ready = e.object;
        if (!isLoopback(podIp(e.object))) {
          outside.push(podIp(e.object));
          return;
        }
        nats.publish('router.register', floorMessage(`floor-${w.host}`, e.object));
      } else if (w.readyAt !== undefined && w.goneAt === undefined && e.object.metadata.deletionTimestamp) {
        w.goneAt = performance.now();
        nats.publish('router.unregister', floorMessage(`floor-${w.host}`, e.object));
      }
    });
    for (const subject of ['router.register', 'router.unregister']) {
      nats.subscribe(subject, {
        callback: (_err, msg) => {
          const m = msg.json<{ uris?: string[]; private_instance_id?: string }>();
          if (m.private_instance_id?.startsWith('floor-')) return;
          for (const uri of m.uris ?? []) {
            const key = `${subject}:${uri}`;
            if (!seen.has(key)) seen.set(key, performance.now());
          }
        },
      });
    }
    await nats.flush();

    const status = async (host: string): Promise<number> =>
      (await rig.get(host).catch(() => ({ status: 0 }))).status;
    /** performance.now() when gorouter's answer for `host` first is `want`, polled every 2 ms. */
    const until = (host: string, want: (s: number) => boolean) =>
      pollUntil(async () => want(await status(host)), TIMEOUT_MS, 2);

    const counts0 = proxy.counts();
    const window0 = performance.now();
    const up: Sample[] = [];
    const down: Sample[] = [];
    for (let i = 0; i < TRIES; i++) {
      const guid = uuid(i, 'route');
      const host = `app-${i}.bench.example.com`;
      const w: { host: string; ready?: KubeObject; readyAt?: number; goneAt?: number } = { host };
      watching.set(guid, w);
      const body = { ...desireBody(guid, 'v1'), routes: { 'cf-router': [{ hostname: host, port: 8080 }] } };
      const ours = until(host, (s) => s === 200);
      const floor = until(`floor-${host}`, (s) => s === 200);
      await send('PUT', `/apps/${guid}-v1`, body);
      const [o, f] = await Promise.all([ours, floor]);
      if (outside.length > 0) throw new Error(`routing: pod IPs outside 127.0.0.0/8: ${outside.join(', ')}`);
      const at = w.readyAt ?? NaN;
      up.push({ at, ours: o - at, floor: f - at, seen: (seen.get(`router.register:${host}`) ?? NaN) - at });

      const oursGone = until(host, (s) => s === 404);
      const floorGone = until(`floor-${host}`, (s) => s === 404);
      await send('PUT', `/apps/${guid}/v1/stop`);
      const [og, fg] = await Promise.all([oursGone, floorGone]);
      const goneAt = w.goneAt ?? NaN;
      down.push({
        at: goneAt,
        ours: og - goneAt,
        floor: fg - goneAt,
        seen: (seen.get(`router.unregister:${host}`) ?? NaN) - goneAt,
      });
      log(
        `routing try ${i + 1}: Ready → routable ${up.at(-1)?.ours.toFixed(0)} ms (floor ${up.at(-1)?.floor.toFixed(0)}); ` +
          `deleted → 404 ${down.at(-1)?.ours.toFixed(0)} ms (floor ${down.at(-1)?.floor.toFixed(0)})`,
      );
      // The pod gone from the store before the next try, so tries do not overlap.
      await pollUntil(
        () =>
          Promise.resolve(
            !sim.store
              .all(podType, NAMESPACE)
              .some((p) => p.metadata.labels?.['cloudfoundry.org/guid'] === guid),
          ),
        TIMEOUT_MS,
        20,
      );
    }
    const windowS = (performance.now() - window0) / 1000;
    const during = countsBetween(counts0, proxy.counts());
    unsubscribe();
    // A route emitter that lists would list pods; the worker's other LISTs in the window are the
    // converge job's look-up of each desired app's workloads, one per desire, routing or not.
    const lists = requestsOf(during, 'LIST', 'pods') + requestsOf(during, 'LIST_PAGE', 'pods');
    const others = describeCounts(
      new Map([...during].filter(([k]) => k.startsWith('LIST') && !k.endsWith(' pods'))),
    );
    log(`routing: the worker's requests while routing: ${describeCounts(during) || 'none'}`);

    const failed = [...up, ...down].filter((s) => [s.ours, s.floor].some(Number.isNaN)).length;
    if (failed > 0) throw new Error(`routing: ${failed} tries did not change gorouter's answer within 10 s`);
    const size = `${TRIES} apps of 1 instance, one after another, simulated cluster (default pacing)`;
    const rowsOf = (name: string, samples: Sample[], p50Target: number, p99Target: number): Row[] => {
      const ours = samples.map((s) => s.ours);
      const floor = samples.map((s) => s.floor);
      const seenMs = samples.map((s) => s.seen);
      return ([50, 99] as const).map((p) => {
        const target = p === 50 ? p50Target : p99Target;
        return {
          scenario: `routing: ${name}`,
          size,
          metric: `${name} through gorouter, p${p}`,
          ours: percentile(ours, p),
          baseline: percentile(floor, p),
          unit: 'ms',
          ratio: percentile(ours, p) / percentile(floor, p),
          ratioMeaning: '× the bare publish',
          target: `≤ ${target / 1000} s`,
          met: percentile(ours, p) <= target,
          note:
            `baseline: the bench publishes the same message on NATS the moment the cluster's store has the ` +
            `change; our message seen by a bare subscriber after ${percentile(seenMs, p).toFixed(0)} ms (p${p})`,
        };
      });
    };
    return [
      ...rowsOf('Ready → routable', up, 1000, 2000),
      ...rowsOf('deleted → 404', down, 1000, 2000),
      {
        scenario: 'routing: LISTs',
        size,
        metric: `LISTs of pods by the worker while routing (${windowS.toFixed(0)} s)`,
        ours: lists,
        baseline: windowS / EIRINI_LIST_EVERY_S,
        unit: '',
        ratio: lists / (windowS / EIRINI_LIST_EVERY_S),
        ratioMeaning: "× Eirini's route collector",
        target: '0',
        met: lists === 0,
        note:
          `baseline: a LIST of every pod each ${EIRINI_LIST_EVERY_S} s; the cache's resync set to 1 h; ` +
          `other LISTs, the converge job's per desire: ${others || 'none'}`,
      },
    ];
  } finally {
    for (const c of children) await stopChild(c);
    await nats.close();
    await deletePrefix(redis, prefix);
    redis.disconnect();
    await proxy.close();
    await sim.close();
    await rig.close();
  }
}
