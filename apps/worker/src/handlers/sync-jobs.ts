/**
 * The sync's part for tasks and staging: finished Jobs get their outcome recorded (the first seen wins)
 * and a report enqueued, until the Job carries the reported mark; reported Jobs are deleted after the
 * configured time; a task whose run was never enqueued (or lost) is enqueued again. Reports are
 * one job per guid, so enqueueing them on every pass costs nothing once queued.
 */
import type { DesiredTask } from '@opi/domain';
import type { Stored } from '@opi/kube';
import type { TaskRecord } from '@opi/state';
import {
  ANNOTATION_STAGING_GUID,
  ANNOTATION_TASK_GUID,
  type Job,
  type Pod,
  STAGING_SELECTOR,
  TASK_SELECTOR,
  jobFinished,
  stagingOutcome,
  taskJobName,
  taskOutcome,
} from '@opi/translation';
import type { HandlerDeps } from '../deps.js';
import { REPORTED_ANNOTATION, markJobReported } from './report.js';

export interface JobSyncReport {
  jobs: number;
  reporting: number;
  deleted: number;
  rerun: number;
}

function jobNameOf(p: Pod): string | undefined {
  return p.metadata.labels?.['batch.kubernetes.io/job-name'] ?? p.metadata.labels?.['job-name'];
}

/** A task record rebuilt from its Job when Redis lost it: enough to report the end to CC. */
function taskFromJob(job: Stored<Job>, taskGuid: string): DesiredTask | undefined {
  const a = job.metadata.annotations ?? {};
  const callback = a['cloudfoundry.org/completion_callback'];
  if (!callback) return undefined;
  const container = job.spec?.template.spec?.containers[0];
  return {
    taskGuid,
    name: a['cloudfoundry.org/task_name'] ?? '',
    appGuid: job.metadata.labels?.['cloudfoundry.org/app_guid'] ?? '',
    appName: a['cloudfoundry.org/app_name'] ?? '',
    orgGuid: '',
    orgName: a['cloudfoundry.org/org_name'] ?? '',
    spaceGuid: '',
    spaceName: a['cloudfoundry.org/space_name'] ?? '',
    namespace: job.metadata.namespace ?? '',
    completionCallback: callback,
    spec: {
      image: container?.image ?? '',
      command: [],
      environment: [],
      memoryMb: 0,
      diskMb: 0,
      cpuWeight: 0,
    },
  };
}

/** `jobPods`: the pods of task and staging Jobs, from the sync's one listing of every managed pod. */
export async function syncJobs(deps: HandlerDeps, jobPods: readonly Pod[]): Promise<JobSyncReport> {
  const { kube, tasks, producer } = deps;
  const [taskJobs, stagingJobs] = await Promise.all([
    kube.listJobs(deps.syncNamespace, TASK_SELECTOR),
    kube.listJobs(deps.syncNamespace, STAGING_SELECTOR),
  ]);
  const podsOf = new Map<string, Pod[]>();
  for (const p of jobPods) {
    const key = `${p.metadata.namespace ?? ''}/${jobNameOf(p) ?? ''}`;
    podsOf.set(key, [...(podsOf.get(key) ?? []), p]);
  }
  const report: JobSyncReport = {
    jobs: taskJobs.items.length + stagingJobs.items.length,
    reporting: 0,
    deleted: 0,
    rerun: 0,
  };
  const now = Date.now();

  const handleReported = async (job: Stored<Job>): Promise<boolean> => {
    const at = job.metadata.annotations?.[REPORTED_ANNOTATION];
    if (!at) return false;
    if (jobFinished(job) && now - Date.parse(at) >= deps.finishedJobTtlSeconds * 1000) {
      await kube.deleteJob(job.metadata.namespace ?? '', job.metadata.name);
      report.deleted++;
    }
    return true;
  };

  const taskJobNames = new Set<string>();
  for (const job of taskJobs.items) {
    taskJobNames.add(job.metadata.name);
    if (await handleReported(job)) continue;
    const taskGuid = job.metadata.annotations?.[ANNOTATION_TASK_GUID];
    if (!taskGuid) continue;
    let rec: TaskRecord | undefined = await tasks.getTask(taskGuid);
    if (!rec) {
      // Redis lost it (a flush): rebuilt from the Job whether it still runs or not, so that GET /tasks
      // lists a running task again (CC fails running tasks the OPI no longer lists) and its end is told.
      const task = taskFromJob(job, taskGuid);
      if (!task) continue;
      await tasks.createTask(task);
      deps.logger.info({ taskGuid }, 'task record rebuilt from its Job');
    }
    if (!jobFinished(job)) continue;
    const outcome = taskOutcome(job, podsOf.get(`${job.metadata.namespace}/${job.metadata.name}`) ?? []);
    if (!outcome) continue;
    rec = await tasks.setTaskOutcome(taskGuid, outcome);
    if (rec?.reported) {
      // Reported, but the worker died before marking the Job: mark it now, or a Redis that loses the
      // record (or its expiry) would make a later sync report the task again.
      await markJobReported(deps, { namespace: job.metadata.namespace ?? '', name: job.metadata.name });
    } else if (rec) {
      await producer.reportTask(taskGuid);
      report.reporting++;
    }
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

  for (const job of stagingJobs.items) {
    if (await handleReported(job)) continue;
    const stagingGuid = job.metadata.annotations?.[ANNOTATION_STAGING_GUID];
    if (!stagingGuid || !jobFinished(job)) continue;
    const outcome = stagingOutcome(job, podsOf.get(`${job.metadata.namespace}/${job.metadata.name}`) ?? []);
    if (!outcome) continue;
    const rec = await tasks.setStagingOutcome(stagingGuid, outcome);
    if (rec && !rec.reported) {
      await producer.reportStaging(stagingGuid);
      report.reporting++;
    }
  }
  return report;
}
