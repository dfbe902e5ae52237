/** Crash reports from the instances the cache sees: one job per crash, its id (pod uid, crash count). */
import type { JobProducer } from '@opi/queue';
import { type AppPodSummary, crashReportsFor, reportedCrashesOf } from '@opi/translation';

/** One report per crash not yet marked on its pod; the job id makes repeats free. Answers how many. */
export async function enqueueCrashReports(
  producer: Pick<JobProducer, 'reportCrash'>,
  run: readonly AppPodSummary[],
  assignments: ReadonlyMap<string, number>,
): Promise<number> {
  let n = 0;
  for (const { unreported: pod, processGuid } of run) {
    if (!pod) continue;
    const index = assignments.get(pod.metadata.name) ?? 0;
    const { reports, reportedUpTo } = crashReportsFor(pod, processGuid, index, reportedCrashesOf(pod));
    for (const r of reports) {
      await producer.reportCrash({
        ...r,
        podNamespace: pod.metadata.namespace ?? '',
        podUid: pod.metadata.uid ?? '',
        reportedUpTo,
      });
      n++;
    }
  }
  return n;
}
