/**
 * One task or staging Job seen, by the cache writer on every change of it or its pods and by the sync:
 * a finished Job's outcome recorded and its report enqueued (reports are one job per guid, so enqueueing
 * again costs nothing once queued), a task record Redis lost rebuilt from the Job.
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
  taskOutcome,
} from '@opi/translation';
import type { Job, Pod } from '@opi/kube-objects';
import type { HandlerDeps } from '../deps.js';
import { markJobReported } from './report.js';

/** What the sync counts of one Job's pass. */
export type JobStep = 'reporting' | 'none';

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
