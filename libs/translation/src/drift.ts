/**
 * What the watch repairs at once instead of leaving it to the sync (docs/decisions/0009-watch-repairs.md):
 * an LRP's workload deleted, or its spec changed by someone else, and a StatefulSet rollout held up by
 * old-revision pods that are not ready (which its controller will not replace, rollout.ts).
 *
 * Our converge stamps the record's generation on every workload it writes; Kubernetes moves
 * `metadata.generation` on every spec change. A spec change that moved the generation but kept the
 * stamp was not ours (kubectl scale, set image, edit), or was our repair of one (the converge writes the
 * same stamp again): either way one more converge puts the record's spec back, and for our repair that
 * write changes nothing, so no event follows and the rounds end.
 */
import type { AppPodSummary, WorkloadSummary } from './watch-summaries.js';

export type WorkloadDrift =
  /** Gone from the watch (deleted, or its labels edited away) while it was held. */
  | 'deleted'
  /** Its spec changed and the stamp did not: not a converge of a newer record. */
  | 'edited';

/** The drift one watch event shows, from the workload as held before and after it (undefined: none). */
export function workloadDrift(
  prev: WorkloadSummary | undefined,
  next: WorkloadSummary | undefined,
): WorkloadDrift | undefined {
  if (!prev) return undefined;
  if (!next) return 'deleted';
  const moved =
    prev.specGeneration !== undefined &&
    next.specGeneration !== undefined &&
    next.specGeneration !== prev.specGeneration;
  return moved && next.generation === prev.generation ? 'edited' : undefined;
}

/**
 * Whether a StatefulSet's rollout is held up: its controller has seen its spec, and some pod of it runs
 * an older revision and is not ready (the pods settle-rollout deletes). False for a Deployment.
 */
export function rolloutHeldUp(workload: WorkloadSummary, pods: readonly AppPodSummary[]): boolean {
  const update = workload.updateRevision;
  if (workload.kind !== 'statefulset' || update === undefined) return false;
  return pods.some(
    (p) =>
      p.ordinal !== undefined && p.revision !== undefined && p.revision !== update && p.state !== 'RUNNING',
  );
}
