/** What the cluster cache offers the sync, its health and its metrics (the ClusterCache implements it). */
import type { WorkloadSummary } from '@opi/translation';
import type { Job, Pod } from '@opi/kube-objects';
import type { Stored } from '@opi/kube';

/** What the sync reads of the watched cluster. */
export interface ClusterView {
  /** Every LRP workload of either kind, summarised (an LRP has two only for a moment, see the sync). */
  workloads(): Iterable<WorkloadSummary>;
  /** Every task and staging Job (slim). */
  jobs(): Iterable<Stored<Job>>;
  /** The pods of a Job (slim). */
  podsOfJob(namespace: string, name: string): Pod[];
  /** Writes the whole instances cache again from what is held (after Redis lost it, or as a repair). */
  rewriteInstances(options?: RewriteOptions): Promise<{ pods: number }>;
}

export interface RewriteOptions {
  /** Skip it when the last whole rewrite finished this recently (e.g. the sync right after a takeover's). */
  unlessWithinMs?: number;
}

/** Hooks for metrics; the worker's main wires them to prom-client. */
export interface ClusterCacheObserver {
  /** Seconds from an object's change (its own timestamps) to the cache write that reflects it. */
  lag?(kind: CacheKind, seconds: number): void;
  event?(kind: CacheKind, type: string): void;
  relist?(kind: CacheKind, reason: string): void;
  restart?(kind: CacheKind, reason: string): void;
  /** An LRP's pods began to be refused (decision 12), counted once per episode by `reason` (quota, …). */
  podsRefused?(reason: string): void;
}

/** `events`: the StatefulSets' FailedCreate Events (their pods refused). */
export type CacheKind = 'deployments' | 'statefulsets' | 'pods' | 'jobs' | 'events';

/** One watched kind's health, for /readyz and the leader's heartbeat. */
export interface KindStatus {
  state: string;
  synced: boolean;
  objects: number;
  resourceVersion: string | undefined;
  lastEventAt: number | undefined;
  watchingSince: number | undefined;
}
