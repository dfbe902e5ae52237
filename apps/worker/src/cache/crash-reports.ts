/** Crash reports from the instances the cache sees: one job per crash, its id (pod uid, crash count). */
import type { JobProducer } from '@opi/queue';
import { shownIndexes } from '@opi/domain';
import { type AppPodSummary, crashReportsFor, reportedCrashesOf } from '@opi/translation';

/**
 * One report per crash not yet marked on its pod; the job id makes repeats free. Answers how many. The
 * index is the one /instances shows for the pod (shownIndexes over the LRP's rows as the cache holds
 * them), given the desired count; without it, the index assigned.
 */
export async function enqueueCrashReports(
  producer: Pick<JobProducer, 'reportCrash'>,
  run: readonly AppPodSummary[],
  assignments: ReadonlyMap<string, number>,
  desired?: number,
): Promise<number> {
  const assigned = run.map((p) => ({
    index: assignments.get(p.name) ?? 0,
    ordinal: p.ordinal !== undefined,
  }));
  const shown = desired === undefined ? assigned.map((r) => r.index) : shownIndexes(assigned, desired);
  let n = 0;
  for (const [i, { unreported: pod, processGuid }] of run.entries()) {
    if (!pod) continue;
    const index = shown[i] ?? 0;
    for (const r of crashReportsFor(pod, processGuid, index, reportedCrashesOf(pod))) {
      await producer.reportCrash({
        ...r,
        podNamespace: pod.metadata.namespace ?? '',
        podUid: pod.metadata.uid ?? '',
      });
      n++;
    }
  }
  return n;
}
