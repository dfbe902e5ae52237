import { describe, expect, it } from '@jest/globals';
import {
  DIEGO_REASON_MAX,
  STAGING_MESSAGE_MAX,
  type StagingErrorId,
  type StagingOutcome,
  type TaskOutcome,
} from '@opi/domain';
import type { JobResult } from './job-outcome.js';
import { jobFinished, parseStagingResult, stagingOutcome, taskOutcome } from './job-outcome.js';
import type { ContainerState, Job, JobCondition, JobStatus, Pod, PodStatus } from '@opi/kube-objects';

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
/** A pod the scheduler could not place, with its message. */
const unscheduled = (container: string, message: string): Pod => {
  const p = pod(container, waiting('ContainerCreating'), { phase: 'Pending' });
  return {
    ...p,
    status: {
      ...p.status,
      conditions: [{ type: 'PodScheduled', status: 'False', reason: 'Unschedulable', message }],
    },
  };
};

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
  const fails = (failureReason: string): TaskOutcome => ({ failed: true, failureReason });
  const named = (j: Job): Job => ({
    ...j,
    metadata: { ...j.metadata, annotations: { 'cloudfoundry.org/task_name': 'migrate' } },
  });

  it.each<[string, Job, Pod[], TaskOutcome | undefined]>([
    ['still running', job({ active: 1 }), [task({ running: { startedAt: T0 } })], undefined],
    ['succeeded', succeededJob, [task(exited(0, 'Completed'))], { failed: false, failureReason: '' }],
    ['succeeded, pod already gone', succeededJob, [], { failed: false, failureReason: '' }],
    [
      "exited non-zero: Diego's words, the task's log source first",
      named(failedJob()),
      [task(exited(3, 'Error'))],
      fails('APP/TASK/migrate: Exited with status 3'),
    ],
    [
      'exited non-zero, the Job without the task name',
      failedJob(),
      [task(exited(1, 'Error'))],
      fails('Exited with status 1'),
    ],
    [
      'OOM-killed',
      named(failedJob()),
      [task(exited(137, 'OOMKilled'))],
      fails('APP/TASK/migrate: Exited with status 137 (out of memory)'),
    ],
    [
      'a termination message the task wrote, on one line',
      named(failedJob()),
      [task(exited(2, 'Error', 'relation "users" does not exist\n'))],
      fails('APP/TASK/migrate: Exited with status 2: relation "users" does not exist'),
    ],
    ['a termination without reason', failedJob(), [task(exited(3))], fails('Exited with status 3')],
    [
      'evicted: the pod reason, not the container exit it caused',
      named(failedJob()),
      [
        task(exited(137, 'Error'), {
          phase: 'Failed',
          reason: 'Evicted',
          message: 'The node was low on resource: ephemeral-storage.',
        }),
      ],
      fails('APP/TASK/migrate: evicted: The node was low on resource: ephemeral-storage.'),
    ],
    [
      'deadline while the image cannot be pulled: the waiting reason',
      failedJob('DeadlineExceeded', 'Job was active longer than specified deadline'),
      [task(waiting('ImagePullBackOff', 'Back-off pulling image "nope"'))],
      fails('ImagePullBackOff: Back-off pulling image "nope"'),
    ],
    [
      'deadline while never scheduled: the placement error',
      failedJob('DeadlineExceeded'),
      [unscheduled('opi-task', '0/3 nodes are available: 3 Insufficient memory.')],
      fails('Unschedulable: Insufficient resources: memory'),
    ],
    [
      'deadline while running (FailureTarget, pod terminating): the Job reason',
      job({ conditions: [condition('FailureTarget', 'DeadlineExceeded')] }),
      [task({ running: { startedAt: T0 } })],
      fails('DeadlineExceeded'),
    ],
    [
      'no pod left: the Job condition reason',
      failedJob('DeadlineExceeded', 'Job was active longer than specified deadline'),
      [],
      fails('DeadlineExceeded: Job was active longer than specified deadline'),
    ],
    ['failed count only, nothing else known', job({ failed: 1 }), [], fails('the Job failed')],
    [
      'the latest failed run of several pods',
      failedJob(),
      [
        task(exited(137, 'OOMKilled', undefined, T2), { created: T1 }),
        task(exited(1, 'Error'), { created: T0 }),
      ],
      fails('Exited with status 137 (out of memory)'),
    ],
    [
      'a container not named opi-task (the first is used)',
      failedJob(),
      [pod('other', exited(137, 'OOMKilled'))],
      fails('Exited with status 137 (out of memory)'),
    ],
  ])('%s', (_what, j, pods, expected) => {
    expect(taskOutcome(j, pods)).toEqual(expected);
  });

  it(`keeps a 4 KiB termination message within Diego's ${DIEGO_REASON_MAX} characters`, () => {
    const outcome = taskOutcome(named(failedJob()), [task(exited(1, 'Error', 'x'.repeat(4096)))]);
    expect(outcome?.failureReason).toHaveLength(DIEGO_REASON_MAX);
    expect(outcome?.failureReason).toMatch(/^APP\/TASK\/migrate: Exited with status 1: x+…$/);
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

const stagingError = (message: string, errorId: StagingErrorId = 'StagingError'): StagingOutcome => ({
  failed: true,
  message,
  errorId,
});

describe('parseStagingResult', () => {
  const fails = (message: string) => stagingError(message);
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
  const fails = stagingError;
  /** A buildpack's compile failure as FallbackToLogsOnError gives it: the log's last lines. */
  const bundleLog = [
    '-----> Installing dependencies using bundler 2.1.4',
    '       Running: bundle install --without development:test --jobs=4 --retry=4',
    '       Fetching nokogiri 1.10.9',
    '       Installing nokogiri 1.10.9 with native extensions',
    '       Gem::Ext::BuildError: ERROR: Failed to build gem native extension.',
    ...Array.from({ length: 60 }, (_, i) => `       checking for ${i}.h... no`),
    '       An error occurred while installing nokogiri (1.10.9), and Bundler cannot continue.',
    "       Make sure that `gem install nokogiri -v '1.10.9' --source 'https://rubygems.org/'` succeeds before bundling.",
    ' !     Failed to install gems via Bundler.',
    'Failed to compile droplet: Failed to run all supply scripts: exit status 14',
  ].join('\n');

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
      fails('Exited with status 2: no buildpack detected'),
    ],
    [
      'the recipe failed silently',
      failedJob(),
      [stage(exited(1, 'Error', ''))],
      fails('Exited with status 1'),
    ],
    [
      'no buildpack detected (222)',
      failedJob(),
      [stage(exited(222, 'Error', 'None of the buildpacks detected a compatible application'))],
      fails(
        'Exited with status 222: None of the buildpacks detected a compatible application',
        'NoAppDetectedError',
      ),
    ],
    [
      "compile failed (223), a log tail: its last error line, not the log's first lines",
      failedJob(),
      [stage(exited(223, 'Error', bundleLog))],
      fails(
        'Exited with status 223: An error occurred while installing nokogiri (1.10.9), and Bundler cannot continue.',
        'BuildpackCompileFailed',
      ),
    ],
    [
      'release failed (224)',
      failedJob(),
      [stage(exited(224, 'Error', 'Failed to build droplet release: exit status 1'))],
      fails(
        'Exited with status 224: Failed to build droplet release: exit status 1',
        'BuildpackReleaseFailed',
      ),
    ],
    [
      'OOM-killed, with the log tail',
      failedJob(),
      [stage(exited(137, 'OOMKilled', 'compiling...\nKilled'))],
      fails('Exited with status 137 (out of memory): Killed'),
    ],
    [
      'the recipe image cannot be pulled (deadline)',
      failedJob('DeadlineExceeded', 'Job was active longer than specified deadline'),
      [stage(waiting('ErrImagePull', 'pull access denied'))],
      fails('ErrImagePull: pull access denied'),
    ],
    [
      'never scheduled, for lack of memory',
      failedJob('DeadlineExceeded'),
      [unscheduled('opi-staging', '0/3 nodes are available: 3 Insufficient memory.')],
      fails('insufficient resources: memory', 'InsufficientResources'),
    ],
    [
      'never scheduled, no node matches',
      failedJob('DeadlineExceeded'),
      [
        unscheduled(
          'opi-staging',
          "0/3 nodes are available: 3 node(s) didn't match Pod's node affinity/selector.",
        ),
      ],
      fails(
        "found no compatible cell: 0/3 nodes are available: 3 node(s) didn't match Pod's node affinity/selector.",
        'NoCompatibleCell',
      ),
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
      fails('evicted: The node was low on resource: memory.'),
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

  it.each([
    ['a long error line', `Error: ${'x'.repeat(2000)}`],
    ['2,000 lines without an error word', Array.from({ length: 2000 }, (_, i) => `line ${i}`).join('\n')],
    ['astral characters, never split', `error: ${'😀'.repeat(500)}`],
  ])('%s: a message CC can store after its prefix', (_what, message) => {
    const outcome = stagingOutcome(failedJob(), [stage(exited(223, 'Error', message))]);
    if (!outcome?.failed) throw new Error('not a failure');
    expect([...outcome.message].length).toBeLessThanOrEqual(STAGING_MESSAGE_MAX);
    expect(outcome.message).not.toMatch(/[\uD800-\uDBFF](?![\uDC00-\uDFFF])/);
    expect(outcome.message).toMatch(/^Exited with status 223: /);
  });
});
