/**
 * The simulated control plane behind the API: scheduler, kubelet (pod lifecycle and failures), and the
 * Deployment, ReplicaSet, StatefulSet, Job and ResourceQuota controllers. They act on the store directly, as the real
 * ones act through the API, and react to its change events through per-object work queues.
 */
import type { LogRequest } from '../api-server.js';
import type { BehaviourConfig } from '../behaviour.js';
import type { PodRange } from '../pod-range.js';
import { typeKey } from '../resources.js';
import type { Store, StoreEvent } from '../store.js';
import type { KubeObject } from '../types.js';
import type { LogWrite, PodLogRead } from './container-logs.js';
import { Context } from './context.js';
import { DeploymentController } from './deployment.js';
import { JobController } from './job.js';
import { Kubelet } from './kubelet.js';
import { Nodes } from './nodes.js';
import { QuotaController } from './quota.js';
import { key } from './pods.js';
import { ReplicaSetController } from './replicaset.js';
import { Scheduler } from './scheduler.js';
import { StatefulSetController } from './statefulset.js';

export interface Controllers {
  /** Pod logs for the pods/log subresource. */
  logs(req: LogRequest): PodLogRead;
  /** Lines a test asks a running container to write (`POST /sim/pods/<ns>/<name>/log`). */
  writeLog(req: LogWrite): number;
  /** Changes pacing at run time (nodes excepted). */
  setBehaviour(partial: Partial<BehaviourConfig>): BehaviourConfig;
  /** Stops every controller; resolves once the pods' listeners are closed. */
  stop(): Promise<void>;
}

export interface ControllerOptions {
  /** Where pod IPs come from: the simulator's claimed loopback range (pod-range.ts). */
  podRange: PodRange;
  /** Running containers answer HTTP on their declared ports (default true). */
  servePods?: boolean;
}

export function startControllers(
  store: Store,
  behaviour: BehaviourConfig,
  random: () => number,
  options: ControllerOptions,
): Controllers {
  const ctx = new Context(store, { ...behaviour, nodes: { ...behaviour.nodes } }, random);
  const { types } = ctx;
  const nodes = new Nodes(ctx, options.podRange);
  const scheduler = new Scheduler(ctx, nodes);
  const kubelet = new Kubelet(ctx, nodes, { servePods: options.servePods ?? true });
  const replicasets = new ReplicaSetController(ctx);
  const deployments = new DeploymentController(ctx);
  const statefulsets = new StatefulSetController(ctx);
  const jobs = new JobController(ctx);
  const quotas = new QuotaController(ctx);

  /** Queues the controller that owns o (by its controller ownerReference), if it is one of ours. */
  const enqueueOwner = (o: KubeObject): void => {
    for (const ref of o.metadata.ownerReferences ?? []) {
      if (ref.controller !== true) continue;
      const k = key(o.metadata.namespace, ref.name);
      if (ref.kind === 'ReplicaSet' && ref.apiVersion === 'apps/v1') replicasets.enqueue(k);
      else if (ref.kind === 'Deployment' && ref.apiVersion === 'apps/v1') deployments.enqueue(k);
      else if (ref.kind === 'StatefulSet' && ref.apiVersion === 'apps/v1') statefulsets.enqueue(k);
      else if (ref.kind === 'Job' && ref.apiVersion === 'batch/v1') jobs.enqueue(k);
    }
  };

  const onEvent = (e: StoreEvent): void => {
    const o = e.object;
    const k = key(o.metadata.namespace, o.metadata.name);
    switch (typeKey(e.resource)) {
      case typeKey(types.pods):
        scheduler.onPod(e);
        kubelet.onPod(e);
        enqueueOwner(o);
        quotas.onPod(o.metadata.namespace);
        break;
      case typeKey(types.resourcequotas):
        quotas.enqueue(o.metadata.namespace ?? '');
        break;
      case typeKey(types.replicasets):
        replicasets.enqueue(k);
        enqueueOwner(o);
        break;
      case typeKey(types.deployments):
        deployments.enqueue(k);
        break;
      case typeKey(types.statefulsets):
        statefulsets.enqueue(k);
        break;
      case typeKey(types.controllerrevisions):
        if (e.type === 'DELETED') enqueueOwner(o);
        break;
      case typeKey(types.jobs):
        if (e.type === 'DELETED') jobs.forget(o.metadata.uid);
        else jobs.enqueue(k);
        break;
      case typeKey(types.nodes):
        scheduler.onNode();
        break;
      default:
        break;
    }
  };

  const unsubscribe = store.subscribe((e) => {
    try {
      onEvent(e);
    } catch (err) {
      // Listeners run inside the writer's call: a controller bug must not fail an API request.
      console.error('kube-sim controllers:', err);
    }
  });
  nodes.start();
  // Objects already in the store (a simulator restarted on kept state) are picked up as if just added.
  for (const resource of [
    types.nodes,
    types.pods,
    types.replicasets,
    types.deployments,
    types.statefulsets,
    types.jobs,
    types.resourcequotas,
  ]) {
    for (const object of store.all(resource)) onEvent({ type: 'ADDED', rv: 0, resource, object });
  }

  return {
    logs: (req) => kubelet.logs(req),
    writeLog: (req) => kubelet.writeLog(req),
    setBehaviour: (partial) => {
      const { nodes: _ignored, ...rest } = partial;
      ctx.behaviour = { ...ctx.behaviour, ...rest };
      return { ...ctx.behaviour, nodes: { ...ctx.behaviour.nodes } };
    },
    stop: async () => {
      unsubscribe();
      ctx.timers.stop();
      await kubelet.stop();
    },
  };
}
