/** What the handlers need, passed in by main.ts (real) or by tests (fakes with behaviour). */
import type { KubernetesPort } from '@opi/kube';
import type { Logger } from '@opi/logging';
import type { JobProducer } from '@opi/queue';
import type { CallbackClient } from '@opi/callbacks';
import type { StateStore, TaskStore } from '@opi/state';
import type { WorkloadKind } from '@opi/domain';
import type { ClusterView } from './cache/cluster-view.js';
import type { Unroute } from './routing/unroute.js';

export interface HandlerDeps {
  store: StateStore;
  kube: KubernetesPort;
  producer: JobProducer;
  logger: Logger;
  runAsNonRoot: boolean;
  /** What a new LRP runs as (an existing one keeps its kind); omitted: Deployments. */
  workloadKind?: WorkloadKind | undefined;
  /** A StatefulSet's containers are told their index (Kubernetes ≥ 1.28); omitted: on. */
  instanceIndexEnv?: boolean | undefined;
  /** LRPs of more than one instance get a PodDisruptionBudget (policy/v1, Kubernetes ≥ 1.21); omitted: on. */
  pdbs?: boolean | undefined;
  /** Where the sync looks for workloads: one namespace, or undefined for all (LRPs may name their own). */
  syncNamespace: string | undefined;
  tasks: TaskStore;
  callbacks: CallbackClient;
  /** CC's internal API for crash reports; crash reports are off without it. */
  ccInternalUrl: string | undefined;
  staging: { recipeImage: string; insecureRegistries: string[] };
  /** Finished Jobs that CC has been told of are deleted after this long. */
  finishedJobTtlSeconds: number;
  /** The watched cluster, in the process that holds the cache writer's Lease (the sync reads it). */
  cluster?: ClusterView | undefined;
  /** With OPI_ROUTING=nats: sends gorouter unregisters at once (stop-instance, before its DELETE). */
  unroute?: Unroute | undefined;
}
