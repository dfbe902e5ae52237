/** The Job (batch/v1) that runs a CF task, and the image pull Secret of a task from a private registry. */
import type { DesiredTask } from '@opi/domain';
import { containerResources, containerSecurityContext } from './container.js';
import { pairsEnv, podIdentityEnv } from './env.js';
import type { Container, Job, JobSpec, Secret } from '@opi/kube-objects';
import { dockerConfigSecret } from './pull-secret.js';
import { ANNOTATION_APP_NAME, ANNOTATION_ORG_NAME, ANNOTATION_SPACE_NAME, LABEL_APP_GUID } from './labels.js';
import { ANNOTATION_COMPLETION_CALLBACK, jobName, runOnceJob, runOnceKind } from './run-once-job.js';

export const SOURCE_TYPE_TASK = 'TASK';
export const LABEL_TASK_GUID = 'cloudfoundry.org/task_guid';
export const ANNOTATION_TASK_GUID = 'cloudfoundry.org/task_guid';
export const ANNOTATION_TASK_NAME = 'cloudfoundry.org/task_name';

const TASK = runOnceKind({
  sourceType: SOURCE_TYPE_TASK,
  guidLabel: LABEL_TASK_GUID,
  guidAnnotation: ANNOTATION_TASK_GUID,
});

/** The task's container name, the same in every task's pod. */
export const TASK_CONTAINER = 'opi-task';

/** Every task Job (and task pod) of this service, for list and watch. */
export const TASK_SELECTOR = TASK.selector;

/** `task-<first 8 of the guid>-<10 hex of sha256(guid)>`, at most 24 characters (see jobName). */
export function taskJobName(taskGuid: string): string {
  return jobName('task', taskGuid);
}

/** The image pull Secret of a task's Job. */
export function taskRegistrySecretName(taskGuid: string): string {
  return `${taskJobName(taskGuid)}-registry`;
}

/** One task's Job and pods as a list selector. */
export function taskSelectorString(taskGuid: string): string {
  return TASK.selectorOf(taskGuid);
}

export function taskLabels(task: DesiredTask): Record<string, string> {
  return TASK.labels(task.taskGuid, task);
}

/** The task's annotations (see RunOnceKind), with its name. */
export function taskAnnotations(task: DesiredTask): Record<string, string> {
  return TASK.annotations(task.taskGuid, task, { [ANNOTATION_TASK_NAME]: task.name });
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

/**
 * A task read back from its Job, for a record Redis lost: enough to report its end to CC (the callback,
 * names and image the Job carries); undefined without a callback. What the Job does not keep (the
 * command, the environment, the org and space guids) is left empty.
 */
export function taskFromJob(job: Job, taskGuid: string): DesiredTask | undefined {
  const a = job.metadata.annotations ?? {};
  const callback = a[ANNOTATION_COMPLETION_CALLBACK];
  if (!callback) return undefined;
  const container = job.spec?.template.spec?.containers[0];
  return {
    taskGuid,
    name: a[ANNOTATION_TASK_NAME] ?? '',
    appGuid: job.metadata.labels?.[LABEL_APP_GUID] ?? '',
    appName: a[ANNOTATION_APP_NAME] ?? '',
    orgGuid: '',
    orgName: a[ANNOTATION_ORG_NAME] ?? '',
    spaceGuid: '',
    spaceName: a[ANNOTATION_SPACE_NAME] ?? '',
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
