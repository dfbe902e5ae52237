/** The Job (batch/v1) that runs a CF task, and the image pull Secret of a task from a private registry. */
import type { DesiredTask } from '@opi/domain';
import { containerResources, containerSecurityContext } from './container.js';
import { pairsEnv, podIdentityEnv } from './env.js';
import type { Container, Job, JobSpec, Secret } from './k8s-objects.js';
import {
  ANNOTATION_APP_NAME,
  ANNOTATION_ORG_NAME,
  ANNOTATION_SPACE_NAME,
  LABEL_APP_GUID,
  LABEL_MANAGED_BY,
  LABEL_ORG_GUID,
  LABEL_SOURCE_TYPE,
  LABEL_SPACE_GUID,
  MANAGED_BY,
  validLabels,
} from './labels.js';
import { ANNOTATION_COMPLETION_CALLBACK, jobName, runOnceJob } from './run-once-job.js';
import { dockerConfigSecret } from './secret.js';

export const SOURCE_TYPE_TASK = 'TASK';
export const LABEL_TASK_GUID = 'cloudfoundry.org/task_guid';
export const ANNOTATION_TASK_GUID = 'cloudfoundry.org/task_guid';
export const ANNOTATION_TASK_NAME = 'cloudfoundry.org/task_name';

/** The task's container name, the same in every task's pod. */
export const TASK_CONTAINER = 'opi-task';

/** Every task Job (and task pod) of this service, for list and watch. */
export const TASK_SELECTOR = `${LABEL_MANAGED_BY}=${MANAGED_BY},${LABEL_SOURCE_TYPE}=${SOURCE_TYPE_TASK}`;

/** `task-<first 8 of the guid>-<10 hex of sha256(guid)>`, at most 24 characters (see jobName). */
export function taskJobName(taskGuid: string): string {
  return jobName('task', taskGuid);
}

/** The image pull Secret of a task's Job. */
export function taskRegistrySecretName(taskGuid: string): string {
  return `${taskJobName(taskGuid)}-registry`;
}

/** One task's Job and pods as a list selector (CC's task guids are UUIDs, valid label values). */
export function taskSelectorString(taskGuid: string): string {
  return `${TASK_SELECTOR},${LABEL_TASK_GUID}=${taskGuid}`;
}

/** The task's labels; values Kubernetes would refuse are left out, as for apps (see labelsFor). */
export function taskLabels(task: DesiredTask): Record<string, string> {
  return validLabels([
    [LABEL_SOURCE_TYPE, SOURCE_TYPE_TASK],
    [LABEL_TASK_GUID, task.taskGuid],
    [LABEL_APP_GUID, task.appGuid],
    [LABEL_SPACE_GUID, task.spaceGuid],
    [LABEL_ORG_GUID, task.orgGuid],
    [LABEL_MANAGED_BY, MANAGED_BY],
  ]);
}

/**
 * The task's annotations: what a label cannot hold, and the callback, so that a task found in the cluster
 * (after a restart of the service) can still be reported to CC.
 */
export function taskAnnotations(task: DesiredTask): Record<string, string> {
  return {
    [ANNOTATION_TASK_GUID]: task.taskGuid,
    [ANNOTATION_TASK_NAME]: task.name,
    [ANNOTATION_COMPLETION_CALLBACK]: task.completionCallback,
    [ANNOTATION_APP_NAME]: task.appName,
    [ANNOTATION_SPACE_NAME]: task.spaceName,
    [ANNOTATION_ORG_NAME]: task.orgName,
  };
}

export interface TaskJobSettings {
  /** Refuse images that run as root, as for apps. */
  runAsNonRoot: boolean;
}

function taskContainer(task: DesiredTask, settings: TaskJobSettings): Container {
  const { spec } = task;
  return {
    name: TASK_CONTAINER,
    image: spec.image,
    // Empty: the image's own entrypoint and command.
    ...(spec.command.length > 0 ? { command: [...spec.command] } : {}),
    env: pairsEnv(spec.environment, podIdentityEnv()),
    resources: containerResources(spec),
    securityContext: containerSecurityContext(settings.runAsNonRoot),
  };
}

/** The Job that runs `task` once; see runOnceJob for the retry settings. */
export function taskToJob(task: DesiredTask, settings: TaskJobSettings): Job & { spec: JobSpec } {
  return runOnceJob({
    name: taskJobName(task.taskGuid),
    namespace: task.namespace,
    labels: taskLabels(task),
    annotations: taskAnnotations(task),
    container: taskContainer(task, settings),
    ...(task.spec.registry ? { imagePullSecret: taskRegistrySecretName(task.taskGuid) } : {}),
  });
}

/**
 * The `kubernetes.io/dockerconfigjson` Secret for a task's private image, or undefined without
 * credentials. It carries the task's labels so it is found and cleaned up with the Job.
 */
export function taskRegistrySecret(task: DesiredTask): Secret | undefined {
  if (!task.spec.registry) return undefined;
  return dockerConfigSecret(
    { name: taskRegistrySecretName(task.taskGuid), namespace: task.namespace, labels: taskLabels(task) },
    task.spec.registry,
  );
}
