/** The callback bodies, field for field as docs/cloud-controller.md states them. */
import { describe, expect, it } from '@jest/globals';
import {
  type CrashReport,
  DIEGO_REASON_MAX,
  STAGING_MESSAGE_MAX,
  type StagingOutcome,
  type TaskOutcome,
} from '@opi/domain';
import { crashReportBody, stagingCompletedBody, taskCompletedBody } from './bodies.js';

const TASK_GUID = 'a1b2c3d4-0000-1111-2222-333344445555';

describe('taskCompletedBody', () => {
  it.each<[string, TaskOutcome, object]>([
    ['success', { failed: false, failureReason: '' }, { failed: false, failure_reason: '' }],
    [
      'success with a stray reason',
      { failed: false, failureReason: 'Completed' },
      { failed: false, failure_reason: '' },
    ],
    [
      'error exit',
      { failed: true, failureReason: 'APP/TASK/migrate: Exited with status 3' },
      { failed: true, failure_reason: 'APP/TASK/migrate: Exited with status 3' },
    ],
    [
      'out of memory',
      { failed: true, failureReason: 'APP/TASK/migrate: Exited with status 137 (out of memory)' },
      { failed: true, failure_reason: 'APP/TASK/migrate: Exited with status 137 (out of memory)' },
    ],
    [
      "a reason longer than Diego's bound (an outcome recorded by an older version)",
      { failed: true, failureReason: 'x'.repeat(5000) },
      { failed: true, failure_reason: `${'x'.repeat(DIEGO_REASON_MAX - 1)}…` },
    ],
    [
      'cancelled',
      { failed: true, failureReason: 'task was cancelled' },
      { failed: true, failure_reason: 'task was cancelled' },
    ],
  ])('%s', (_name, outcome, expected) => {
    expect(taskCompletedBody(TASK_GUID, outcome)).toStrictEqual({ task_guid: TASK_GUID, ...expected });
  });
});

describe('stagingCompletedBody', () => {
  const docker = {
    lifecycle_type: 'docker' as const,
    lifecycle_metadata: { docker_image: 'busybox:latest' },
    process_types: { web: '' },
    execution_metadata: '{"cmd":[],"ports":[{"Port":8080,"Protocol":"tcp"}]}',
  };
  const buildpack = {
    lifecycle_type: 'buildpack' as const,
    lifecycle_metadata: { buildpack_key: 'nodejs_buildpack', detected_buildpack: 'nodejs' },
    process_types: { web: 'npm start', worker: 'node worker.js' },
    execution_metadata: '',
  };
  it.each<[string, StagingOutcome, object]>([
    ['docker success', { failed: false, result: docker }, { result: docker }],
    ['buildpack success', { failed: false, result: buildpack }, { result: buildpack }],
    [
      'failure',
      { failed: true, message: 'Exited with status 1: boom', errorId: 'StagingError' },
      { error: { id: 'StagingError', message: 'Exited with status 1: boom' } },
    ],
    [
      'a buildpack compile failure: its own id',
      { failed: true, message: 'Exited with status 223: boom', errorId: 'BuildpackCompileFailed' },
      { error: { id: 'BuildpackCompileFailed', message: 'Exited with status 223: boom' } },
    ],
    [
      'an outcome recorded without an id: StagingError',
      { failed: true, message: 'staging failed: exit code 1' },
      { error: { id: 'StagingError', message: 'staging failed: exit code 1' } },
    ],
    [
      "a message longer than CC's column allows after its prefix (recorded by an older version)",
      { failed: true, message: 'y'.repeat(969) },
      { error: { id: 'StagingError', message: `${'y'.repeat(STAGING_MESSAGE_MAX - 1)}…` } },
    ],
  ])('%s', (_name, outcome, expected) => {
    expect(stagingCompletedBody(outcome)).toStrictEqual(expected);
  });

  it('keeps execution_metadata a JSON string, not an object', () => {
    const body = stagingCompletedBody({ failed: false, result: docker });
    expect(JSON.parse(JSON.stringify(body))).toStrictEqual({ result: docker });
    expect('result' in body && typeof body.result.execution_metadata).toBe('string');
  });

  it('drops fields the outcome carries beyond the contract', () => {
    const extra = { ...docker, secret: 'x' };
    const body = stagingCompletedBody({ failed: false, result: extra });
    expect(body).toStrictEqual({ result: docker });
  });
});

describe('crashReportBody', () => {
  const base: CrashReport = {
    processGuid: 'p-guid',
    instance: 'my-app-dev-1a2b3c4d5e-0',
    index: 0,
    reason: 'CRASHED',
    exitStatus: 1,
    exitDescription: 'APP/PROC/WEB: Exited with status 1',
    crashCount: 3,
    crashTimestamp: 1589212345,
  };
  it.each<[string, Partial<CrashReport>, object]>([
    [
      'crash loop',
      {},
      {
        instance: 'my-app-dev-1a2b3c4d5e-0',
        index: 0,
        cell_id: '',
        reason: 'CRASHED',
        exit_status: 1,
        exit_description: 'APP/PROC/WEB: Exited with status 1',
        crash_count: 3,
        crash_timestamp: 1589212345000000000,
      },
    ],
    [
      'OOM on instance 2',
      {
        instance: 'x-2',
        index: 2,
        exitStatus: 137,
        exitDescription: 'APP/PROC/WEB: Exited with status 137 (out of memory)',
        crashCount: 1,
      },
      {
        instance: 'x-2',
        index: 2,
        cell_id: '',
        reason: 'CRASHED',
        exit_status: 137,
        exit_description: 'APP/PROC/WEB: Exited with status 137 (out of memory)',
        crash_count: 1,
        crash_timestamp: 1589212345000000000,
      },
    ],
  ])('%s', (_name, overrides, expected) => {
    const body = crashReportBody({ ...base, ...overrides });
    expect(body).toStrictEqual(expected);
    // The process guid goes in the URL, not the body.
    expect(JSON.stringify(body)).not.toContain('p-guid');
  });

  it('sends crash_timestamp as the exact integer of nanoseconds Diego sends', () => {
    const json = JSON.stringify(crashReportBody({ ...base, crashTimestamp: 4102444799 }));
    expect(json).toContain('"crash_timestamp":4102444799000000000');
  });
});
