/**
 * Tasks: run-task creates the task's Job (and its pull Secret, owned by the Job); cancel-task deletes the
 * Job with its pods and reports the cancellation; report-task tells CC how the task ended, marks the Job
 * so it is told once, and takes the task off GET /tasks. Each reads the record, so re-runs are harmless.
 */
import { type KubernetesPort, createOrGet } from '@opi/kube';
import { taskCompletedBody } from '@opi/callbacks';
import {
  ownedBy,
  taskJobName,
  taskRegistrySecret,
  taskRegistrySecretName,
  taskToJob,
} from '@opi/translation';
import type { Job, Secret } from '@opi/kube-objects';
import type { HandlerDeps } from '../deps.js';
import {
  type Delivered,
  type JobCreated,
  type JobDeleted,
  type NoRecord,
  type Refused,
  type Skipped,
} from './outcome.js';
import { postToCc, reportCompletion } from './report.js';

/**
 * Makes a Secret owned by a Job (ownedBy), so deleting the Job (or its TTL) takes the credentials along.
 * A Job without a uid is the one asked for, gone again before it could be read (createJobOnce): no owner.
 */
export async function ownSecretByJob(
  kube: KubernetesPort,
  namespace: string,
  secret: Secret,
  job: Job,
): Promise<void> {
  const uid = job.metadata.uid;
  if (!uid) return;
  const current = await kube.secrets.get(namespace, secret.metadata.name);
  if (!current || current.metadata.ownerReferences?.some((r) => r.uid === uid)) return;
  await kube.secrets.replace(namespace, ownedBy(current, job));
}

/** Creates the Job, or reads the one a previous run made (its name is the guid's); `job` if that is gone. */
export async function createJobOnce(kube: KubernetesPort, namespace: string, job: Job): Promise<Job> {
  const made = await createOrGet(
    () => kube.jobs.create(namespace, job),
    () => kube.jobs.get(namespace, job.metadata.name),
  );
  return made.created ? made.object : (made.existing ?? job);
}

export async function runTask(deps: HandlerDeps, taskGuid: string): Promise<NoRecord | Skipped | JobCreated> {
  const rec = await deps.tasks.getTask(taskGuid);
  if (!rec) return { kind: 'no-record' };
  if (rec.cancelled || rec.reported || rec.outcome) {
    return { kind: 'skipped', why: 'nothing to run: cancelled or finished' };
  }
  const { task } = rec;
  const ns = task.namespace;
  const secret = taskRegistrySecret(task);
  // One a previous run made is left as it is: the task's credentials do not change.
  if (secret) await createOrGet(() => deps.kube.secrets.create(ns, secret));
  const job = await createJobOnce(deps.kube, ns, taskToJob(task, { runAsNonRoot: deps.runAsNonRoot }));
  if (secret) await ownSecretByJob(deps.kube, ns, secret, job);
  return { kind: 'job-created', namespace: ns, name: job.metadata.name };
}

export async function cancelTask(deps: HandlerDeps, taskGuid: string): Promise<NoRecord | JobDeleted> {
  const rec = await deps.tasks.getTask(taskGuid);
  if (!rec) return { kind: 'no-record' };
  const ns = rec.task.namespace;
  // Background propagation: the Job's pods go too (batch/v1 would orphan them by default).
  const job = await deps.kube.jobs.delete(ns, taskJobName(taskGuid));
  await deps.kube.secrets.delete(ns, taskRegistrySecretName(taskGuid));
  if (!rec.reported) await deps.producer.reportTask(taskGuid);
  return { kind: 'job-deleted', result: job };
}

export async function reportTask(
  deps: HandlerDeps,
  taskGuid: string,
): Promise<NoRecord | Skipped | Delivered | Refused> {
  const rec = await deps.tasks.getTask(taskGuid);
  if (!rec) return { kind: 'no-record' };
  const job = { namespace: rec.task.namespace, name: taskJobName(taskGuid) };
  return reportCompletion(deps, {
    kind: 'task',
    job,
    record: rec,
    post: (outcome) =>
      postToCc(deps, rec.task.completionCallback, taskCompletedBody(taskGuid, outcome), { taskGuid }),
    markRecord: () => deps.tasks.markTaskReported(taskGuid),
    logged: (outcome, result) => {
      deps.logger.info(
        { taskGuid, failed: outcome.failed, reason: outcome.failureReason, result },
        'task completion reported',
      );
    },
  });
}
