/**
 * The sync's pass over tasks and staging: each watched Job seen again (job-seen.ts), reported Jobs deleted
 * after the configured time, and a task whose run was never enqueued (or was lost) run again.
 */
import { ANNOTATION_TASK_GUID, jobFinished, reportedAt, taskJobName } from '@opi/translation';
import type { ClusterView } from '../cache/cluster-view.js';
import type { HandlerDeps } from '../deps.js';
import { onJobChanged } from './job-seen.js';

export interface JobSyncReport {
  jobs: number;
  reporting: number;
  deleted: number;
  rerun: number;
}

/**
 * The sync's pass over the watched Jobs: each as `onJobChanged`, reported ones deleted after the
 * configured time, and tasks recorded but without a Job run again (or reported, if they ended).
 */
export async function syncJobs(deps: HandlerDeps, view: ClusterView): Promise<JobSyncReport> {
  const { kube, tasks, producer } = deps;
  const report: JobSyncReport = { jobs: 0, reporting: 0, deleted: 0, rerun: 0 };
  const now = Date.now();
  const taskJobNames = new Set<string>();
  for (const job of view.jobs()) {
    report.jobs++;
    if (job.metadata.annotations?.[ANNOTATION_TASK_GUID]) taskJobNames.add(job.metadata.name);
    const at = reportedAt(job);
    if (at) {
      if (jobFinished(job) && now - Date.parse(at) >= deps.finishedJobTtlSeconds * 1000) {
        await kube.jobs.delete(job.metadata.namespace ?? '', job.metadata.name);
        report.deleted++;
      }
      continue;
    }
    const pods = view.podsOfJob(job.metadata.namespace ?? '', job.metadata.name);
    if ((await onJobChanged(deps, job, pods)) === 'reporting') report.reporting++;
  }

  // Tasks recorded but not (or no longer) in the cluster: run them, or report their cancellation.
  for (const taskGuid of await tasks.unreportedTaskGuids()) {
    const rec = await tasks.getTask(taskGuid);
    if (!rec || rec.reported) continue;
    if (rec.outcome) {
      await producer.reportTask(taskGuid);
      report.reporting++;
    } else if (!taskJobNames.has(taskJobName(taskGuid)) && now - rec.createdAt > 10_000) {
      await producer.runTask(taskGuid);
      report.rerun++;
    }
  }
  return report;
}
