import { describe, expect, it } from '@jest/globals';
import type { StagingOutcome, TaskOutcome } from '@opi/domain';
import type { JobResult } from './job-outcome.js';
import { jobFinished, parseStagingResult, stagingOutcome, taskOutcome } from './job-outcome.js';
import type { ContainerState, Job, JobCondition, JobStatus, Pod, PodStatus } from './k8s-objects.js';

const T0 = '2020-05-11T15:52:25Z';
const T1 = '2020-05-11T15:53:00Z';
const T2 = '2020-05-11T15:54:00Z';

const condition = (type: string, reason?: string, message?: string, status: 'True' | 'False' = 'True') =>
  ({ type, status, ...(reason ? { reason } : {}), ...(message ? { message } : {}) }) as JobCondition;
const complete = condition('Complete', 'CompletionsReached');
const failed = (reason = 'BackoffLimitExceeded', message = 'Job has reached the specified backoff limit') =>
  condition('Failed', reason, message);

function job(status: JobStatus = {}, spec: { completions?: number; backoffLimit?: number } = {}): Job {
  return {
    metadata: { name: 'task-7e5d1c3a-3f729cd9a5' },
    spec: { template: {}, parallelism: 1, completions: 1, backoffLimit: 0, ...spec },
    status,
  };
}
const succeededJob = job({ succeeded: 1, conditions: [complete] });
const failedJob = (reason?: string, message?: string) =>
  job({ failed: 1, conditions: [failed(reason, message)] });

function pod(
  container: string,
  state: ContainerState | undefined,
  opts: { created?: string; phase?: PodStatus['phase']; reason?: string; message?: string } = {},
): Pod {
  return {
    metadata: { name: `pod-${opts.created ?? T0}`, creationTimestamp: opts.created ?? T0 },
    status: {
      ...(opts.phase ? { phase: opts.phase } : {}),
      ...(opts.reason ? { reason: opts.reason } : {}),
      ...(opts.message ? { message: opts.message } : {}),
      ...(state
        ? {
            containerStatuses: [
              { name: container, ready: false, restartCount: 0, image: 'i', imageID: '', state },
            ],
          }
        : {}),
    },
  };
}
const exited = (exitCode: number, reason?: string, message?: string, finishedAt = T1): ContainerState => ({
  terminated: {
    exitCode,
    ...(reason ? { reason } : {}),
    ...(message !== undefined ? { message } : {}),
    startedAt: T0,
    finishedAt,
  },
});
const waiting = (reason: string, message?: string): ContainerState => ({
  waiting: { reason, ...(message ? { message } : {}) },
});

describe('jobFinished', () => {
  it.each<[string, Job, JobResult | undefined]>([
    ['a new Job, no status', { metadata: { name: 'j' } }, undefined],
    ['running', job({ active: 1 }), undefined],
    ['Complete', succeededJob, 'succeeded'],
    ['Failed', failedJob(), 'failed'],
    [
      'SuccessCriteriaMet (1.31+), pods still terminating',
      job({ conditions: [condition('SuccessCriteriaMet')] }),
      'succeeded',
    ],
    [
      'FailureTarget (1.31+), pods still terminating',
      job({ conditions: [condition('FailureTarget')] }),
      'failed',
    ],
    [
      'conditions that are not True',
      job({ conditions: [condition('Failed', 'x', 'y', 'False')] }),
      undefined,
    ],
    ['Suspended only', job({ conditions: [condition('Suspended')] }), undefined],
    ['succeeded count before the condition', job({ succeeded: 1 }), 'succeeded'],
    ['failed count before the condition', job({ failed: 1 }), 'failed'],
    [
      'counts without spec: the service defaults (1 completion, no retry)',
      { metadata: { name: 'j' }, status: { failed: 1 } },
      'failed',
    ],
    ['failed count within a backoff limit', job({ failed: 1, active: 1 }, { backoffLimit: 2 }), undefined],
    ['succeeded count short of completions', job({ succeeded: 1 }, { completions: 2 }), undefined],
    ['the condition wins over the counts', job({ succeeded: 1, conditions: [failed()] }), 'failed'],
  ])('%s → %s', (_what, j, expected) => {
    expect(jobFinished(j)).toBe(expected);
  });
});

describe('taskOutcome', () => {
  const task = (state: ContainerState | undefined, opts?: Parameters<typeof pod>[2]) =>
    pod('opi-task', state, opts);

  it.each<[string, Job, Pod[], TaskOutcome | undefined]>([
    ['still running', job({ active: 1 }), [task({ running: { startedAt: T0 } })], undefined],
    ['succeeded', succeededJob, [task(exited(0, 'Completed'))], { failed: false, failureReason: '' }],
    ['succeeded, pod already gone', succeededJob, [], { failed: false, failureReason: '' }],
    ['exited non-zero', failedJob(), [task(exited(1, 'Error'))], { failed: true, failureReason: 'Error' }],
    [
      'OOM-killed',
      failedJob(),
      [task(exited(137, 'OOMKilled'))],
      { failed: true, failureReason: 'OOMKilled' },
    ],
    [
      'a termination without reason',
      failedJob(),
      [task(exited(3))],
      { failed: true, failureReason: 'Error' },
    ],
    [
      'evicted: the pod reason, not the container exit it caused',
      failedJob(),
      [
        task(exited(137, 'Error'), {
          phase: 'Failed',
          reason: 'Evicted',
          message: 'low on ephemeral-storage',
        }),
      ],
      { failed: true, failureReason: 'Evicted' },
    ],
    [
      'deadline while the image cannot be pulled: the waiting reason',
      failedJob('DeadlineExceeded', 'Job was active longer than specified deadline'),
      [task(waiting('ImagePullBackOff', 'Back-off pulling image "nope"'))],
      { failed: true, failureReason: 'ImagePullBackOff' },
    ],
    [
      'deadline while running (FailureTarget, pod terminating): the Job reason',
      job({ conditions: [condition('FailureTarget', 'DeadlineExceeded')] }),
      [task({ running: { startedAt: T0 } })],
      { failed: true, failureReason: 'DeadlineExceeded' },
    ],
    [
      'no pod left: the Job condition reason',
      failedJob('DeadlineExceeded'),
      [],
      { failed: true, failureReason: 'DeadlineExceeded' },
    ],
    [
      'failed count only, nothing else known',
      job({ failed: 1 }),
      [],
      { failed: true, failureReason: 'Error' },
    ],
    [
      'the latest failed run of several pods',
      failedJob(),
      [
        task(exited(137, 'OOMKilled', undefined, T2), { created: T1 }),
        task(exited(1, 'Error'), { created: T0 }),
      ],
      { failed: true, failureReason: 'OOMKilled' },
    ],
    [
      'a container not named opi-task (the first is used)',
      failedJob(),
      [pod('other', exited(137, 'OOMKilled'))],
      { failed: true, failureReason: 'OOMKilled' },
    ],
  ])('%s', (_what, j, pods, expected) => {
    expect(taskOutcome(j, pods)).toEqual(expected);
  });
});

type StagingResult = Extract<StagingOutcome, { failed: false }>['result'];
const ok = (result: StagingResult): StagingOutcome => ({ failed: false, result });
const RESULT: StagingResult = {
  lifecycle_type: 'buildpack',
  lifecycle_metadata: { buildpack_key: 'ruby-key', detected_buildpack: 'ruby 1.8.0' },
  process_types: { web: 'bundle exec rackup', worker: 'rake jobs:work' },
  execution_metadata: '{"cmd":[]}',
};

describe('parseStagingResult', () => {
  const fails = (message: string): StagingOutcome => ({
    failed: true,
    message: `staging failed: ${message}`,
  });
  const json = (patch: Record<string, unknown>) => JSON.stringify({ ...RESULT, ...patch });

  it.each<[string, string | undefined, StagingOutcome]>([
    ['the contract result', JSON.stringify(RESULT), ok(RESULT)],
    [
      'extra fields dropped, extra metadata kept',
      json({ extra: 1, lifecycle_metadata: { ...RESULT.lifecycle_metadata, buildpacks: [] } }),
      ok({ ...RESULT, lifecycle_metadata: { ...RESULT.lifecycle_metadata, buildpacks: [] } }),
    ],
    [
      'a docker result',
      json({ lifecycle_type: 'docker', lifecycle_metadata: { docker_image: 'busybox' } }),
      ok({ ...RESULT, lifecycle_type: 'docker', lifecycle_metadata: { docker_image: 'busybox' } }),
    ],
    ['no message', undefined, fails('the recipe wrote no result to /dev/termination-log')],
    ['a blank message', ' \n', fails('the recipe wrote no result to /dev/termination-log')],
    ['not JSON', 'staging done', fails('the recipe result is not JSON')],
    ['a JSON array', '[]', fails('the recipe result is not a JSON object')],
    ['JSON null', 'null', fails('the recipe result is not a JSON object')],
    [
      'an unknown lifecycle',
      json({ lifecycle_type: 'cnb' }),
      fails('the recipe result is invalid: lifecycle_type must be "buildpack" or "docker"'),
    ],
    [
      'metadata not an object',
      json({ lifecycle_metadata: 'x' }),
      fails('the recipe result is invalid: lifecycle_metadata must be an object'),
    ],
    [
      'no detected buildpack',
      json({ lifecycle_metadata: { buildpack_key: 'k' } }),
      fails('the recipe result is invalid: lifecycle_metadata.detected_buildpack must be a string'),
    ],
    [
      'a process type that is not a string',
      json({ process_types: { web: 1 } }),
      fails('the recipe result is invalid: process_types must be an object of strings'),
    ],
    [
      'execution metadata as an object',
      json({ execution_metadata: { cmd: [] } }),
      fails('the recipe result is invalid: execution_metadata must be a string'),
    ],
  ])('%s', (_what, message, expected) => {
    expect(parseStagingResult(message)).toEqual(expected);
  });
});

describe('stagingOutcome', () => {
  const stage = (state: ContainerState | undefined, opts?: Parameters<typeof pod>[2]) =>
    pod('opi-staging', state, opts);
  const fails = (message: string): StagingOutcome => ({
    failed: true,
    message: `staging failed: ${message}`,
  });

  it.each<[string, Job, Pod[], StagingOutcome | undefined]>([
    ['still running', job({ active: 1 }), [stage({ running: { startedAt: T0 } })], undefined],
    [
      'succeeded with the result in the termination message',
      succeededJob,
      [stage(exited(0, 'Completed', JSON.stringify(RESULT)))],
      ok(RESULT),
    ],
    [
      'succeeded without a result',
      succeededJob,
      [stage(exited(0, 'Completed'))],
      fails('the recipe wrote no result to /dev/termination-log'),
    ],
    ['succeeded, pod gone', succeededJob, [], fails('the staging pod is gone, and its result with it')],
    [
      'the recipe failed with a message',
      failedJob(),
      [stage(exited(2, 'Error', 'no buildpack detected\n'))],
      fails('exit code 2: no buildpack detected'),
    ],
    ['the recipe failed silently', failedJob(), [stage(exited(1, 'Error', ''))], fails('exit code 1')],
    [
      'OOM-killed, with the log tail',
      failedJob(),
      [stage(exited(137, 'OOMKilled', 'compiling...\nKilled'))],
      fails('OOMKilled: exit code 137: compiling...\nKilled'),
    ],
    [
      'the recipe image cannot be pulled (deadline)',
      failedJob('DeadlineExceeded', 'Job was active longer than specified deadline'),
      [stage(waiting('ErrImagePull', 'pull access denied'))],
      fails('ErrImagePull: pull access denied'),
    ],
    [
      'evicted',
      failedJob(),
      [
        stage(undefined, {
          phase: 'Failed',
          reason: 'Evicted',
          message: 'The node was low on resource: memory.',
        }),
      ],
      fails('Evicted: The node was low on resource: memory.'),
    ],
    [
      'no pod: the Job condition',
      failedJob('DeadlineExceeded', 'Job was active longer than specified deadline'),
      [],
      fails('DeadlineExceeded: Job was active longer than specified deadline'),
    ],
    ['nothing known', job({ failed: 1 }), [], fails('the Job failed')],
  ])('%s', (_what, j, pods, expected) => {
    expect(stagingOutcome(j, pods)).toEqual(expected);
  });
});
