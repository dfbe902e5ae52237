/**
 * Tasks and staging from the watched Jobs: a finished Job's outcome recorded and its report enqueued as
 * soon as the cache sees it end (reports are one job per guid, so enqueueing again costs nothing once
 * queued); the sync deletes reported Jobs after the configured time and runs again a task whose run
 * was never enqueued (or was lost).
 */
import type { Stored } from '@opi/kube';
import type { TaskRecord } from '@opi/state';
import {
  ANNOTATION_STAGING_GUID,
  ANNOTATION_TASK_GUID,
  jobFinished,
  reportedAt,
  stagingOutcome,
  taskFromJob,
  taskJobName,
  taskOutcome,
} from '@opi/translation';
import type { Job, Pod } from '@opi/kube-objects';
import type { ClusterView } from '../cache/cluster-view.js';
import type { HandlerDeps } from '../deps.js';
import { markJobReported } from './report.js';

export interface JobSyncReport {
  jobs: number;
  reporting: number;
  deleted: number;
  rerun: number;
}

/** What the sync counts of one Job's pass. */
type JobStep = 'reporting' | 'none';

/**
 * One task or staging Job seen (by the cache, on every change of it or its pods, and by the sync): a
 * task record Redis lost is rebuilt, a finished Job's outcome recorded (the first seen wins) and its
 * report enqueued until the Job carries the reported mark.
 */
export async function onJobChanged(
  deps: HandlerDeps,
  job: Stored<Job>,
  pods: readonly Pod[],
): Promise<JobStep> {
  if (reportedAt(job)) return 'none';
  const taskGuid = job.metadata.annotations?.[ANNOTATION_TASK_GUID];
  if (taskGuid) return onTaskJob(deps, job, pods, taskGuid);
  const stagingGuid = job.metadata.annotations?.[ANNOTATION_STAGING_GUID];
  if (!stagingGuid || !jobFinished(job)) return 'none';
  const outcome = stagingOutcome(job, pods);
  if (!outcome) return 'none';
  const rec = await deps.tasks.setStagingOutcome(stagingGuid, outcome);
  if (rec && !rec.reported) {
    await deps.producer.reportStaging(stagingGuid);
    return 'reporting';
  }
  return 'none';
}

async function onTaskJob(
  deps: HandlerDeps,
  job: Stored<Job>,
  pods: readonly Pod[],
  taskGuid: string,
): Promise<JobStep> {
  const { tasks, producer } = deps;
  let rec: TaskRecord | undefined = await tasks.getTask(taskGuid);
  if (!rec) {
    // Redis lost it (a flush): rebuilt from the Job whether it still runs or not, so that GET /tasks
    // lists a running task again (CC fails running tasks the OPI no longer lists) and its end is told.
    const task = taskFromJob(job, taskGuid);
    if (!task) return 'none';
    await tasks.createTask(task);
    deps.logger.info({ taskGuid }, 'task record rebuilt from its Job');
  }
  if (!jobFinished(job)) return 'none';
  const outcome = taskOutcome(job, pods);
  if (!outcome) return 'none';
  rec = await tasks.setTaskOutcome(taskGuid, outcome);
  if (rec?.reported) {
    // Reported, but the worker died before marking the Job: mark it now, or a Redis that loses the
    // record (or its expiry) would make a later pass report the task again.
    await markJobReported(deps, { namespace: job.metadata.namespace ?? '', name: job.metadata.name });
  } else if (rec) {
    await producer.reportTask(taskGuid);
    return 'reporting';
  }
  return 'none';
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
