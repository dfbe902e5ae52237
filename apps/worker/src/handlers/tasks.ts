/**
 * Tasks: run-task creates the task's Job (and its pull Secret, owned by the Job); cancel-task deletes the
 * Job with its pods and reports the cancellation; report-task tells CC how the task ended, marks the Job
 * so it is told once, and takes the task off GET /tasks. Each reads the record, so re-runs are harmless.
 */
import { AlreadyExistsError, type KubernetesPort } from '@opi/kube';
import { taskCompletedBody } from '@opi/callbacks';
import {
  type Job,
  type Secret,
  taskJobName,
  taskRegistrySecret,
  taskRegistrySecretName,
  taskToJob,
} from '@opi/translation';
import type { HandlerDeps } from '../deps.js';
import { afterDelivery, postToCc } from './report.js';

/** Set on a task or staging Job once CC has its result: the sync neither reports it again nor keeps it. */
export const REPORTED_ANNOTATION = 'opi.cloudfoundry.org/reported-at';

/** Makes a Secret owned by a Job, so deleting the Job (or its TTL) takes the credentials along. */
export async function ownSecretByJob(
  kube: KubernetesPort,
  namespace: string,
  secret: Secret,
  job: Job & { metadata: { uid?: string } },
): Promise<void> {
  const uid = job.metadata.uid;
  if (!uid) return;
  const current = await kube.getSecret(namespace, secret.metadata.name);
  if (!current || current.metadata.ownerReferences?.some((r) => r.uid === uid)) return;
  await kube.replaceSecret(namespace, {
    ...current,
    metadata: {
      ...current.metadata,
      ownerReferences: [
        {
          apiVersion: 'batch/v1',
          kind: 'Job',
          name: job.metadata.name,
          uid,
          controller: true,
          blockOwnerDeletion: true,
        },
      ],
    },
  });
}

export async function createJobOnce(kube: KubernetesPort, namespace: string, job: Job): Promise<Job> {
  try {
    return await kube.createJob(namespace, job);
  } catch (err) {
    if (!(err instanceof AlreadyExistsError)) throw err;
    return (await kube.getJob(namespace, job.metadata.name)) ?? job;
  }
}

export async function runTask(deps: HandlerDeps, taskGuid: string): Promise<string> {
  const rec = await deps.tasks.getTask(taskGuid);
  if (!rec) return 'no record';
  if (rec.cancelled || rec.reported || rec.outcome) return 'nothing to run: cancelled or finished';
  const { task } = rec;
  const ns = task.namespace;
  const secret = taskRegistrySecret(task);
  if (secret) {
    try {
      await deps.kube.createSecret(ns, secret);
    } catch (err) {
      if (!(err instanceof AlreadyExistsError)) throw err;
    }
  }
  const job = await createJobOnce(deps.kube, ns, taskToJob(task, { runAsNonRoot: deps.runAsNonRoot }));
  if (secret) await ownSecretByJob(deps.kube, ns, secret, job);
  return `job ${ns}/${job.metadata.name}`;
}

export async function cancelTask(deps: HandlerDeps, taskGuid: string): Promise<string> {
  const rec = await deps.tasks.getTask(taskGuid);
  if (!rec) return 'no record';
  const ns = rec.task.namespace;
  // Background propagation: the Job's pods go too (batch/v1 would orphan them by default).
  const job = await deps.kube.deleteJob(ns, taskJobName(taskGuid));
  await deps.kube.deleteSecret(ns, taskRegistrySecretName(taskGuid));
  if (!rec.reported) await deps.producer.reportTask(taskGuid);
  return `job ${job}`;
}

export async function markJobReported(deps: HandlerDeps, namespace: string, taskGuid: string): Promise<void> {
  await deps.kube.annotateJob(namespace, taskJobName(taskGuid), {
    [REPORTED_ANNOTATION]: new Date().toISOString(),
  });
}

export async function reportTask(deps: HandlerDeps, taskGuid: string): Promise<string> {
  const rec = await deps.tasks.getTask(taskGuid);
  if (!rec) return 'no record';
  if (rec.reported) return 'already reported';
  if (!rec.outcome) return 'not finished';
  const result = await postToCc(deps, rec.task.completionCallback, taskCompletedBody(taskGuid, rec.outcome), {
    taskGuid,
  });
  // Redis first: one fast write closes the window in which a killed worker's retry would post again. Then
  // the Job, so that a Redis that loses the record later does not make the sync report it again (the sync
  // also marks a Job whose record says reported, should this worker die in between).
  await afterDelivery(deps, 'marking the task reported', () => deps.tasks.markTaskReported(taskGuid));
  await afterDelivery(deps, 'marking the Job reported', () =>
    markJobReported(deps, rec.task.namespace, taskGuid),
  );
  deps.logger.info(
    { taskGuid, failed: rec.outcome.failed, reason: rec.outcome.failureReason, result },
    'task completion reported',
  );
  return result;
}
