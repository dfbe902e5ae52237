/**
 * CC's rules for callback bodies (test/support/cc-rules.ts): the bodies CC refuses or cannot store are
 * caught, with the rule's CC file, and the service's bodies pass.
 */
import { randomUUID } from 'node:crypto';
import { describe, expect, it } from '@jest/globals';
import { crashReportBody, stagingCompletedBody, taskCompletedBody } from '@opi/callbacks';
import { checkCallback } from '../../support/cc-rules.js';

const TASK = randomUUID();
const PG = `${randomUUID()}-${randomUUID()}`;
const taskPath = `/internal/v4/tasks/${TASK}/completed`;
const stagingPath = `/internal/v3/staging/${randomUUID()}/build_completed`;
const crashPath = `/internal/v4/apps/${PG}/crashed`;
const crash = {
  instance: 'app-0',
  index: 0,
  cell_id: '',
  reason: 'CRASHED',
  exit_status: 1,
  exit_description: 'APP/PROC/WEB: Exited with status 1',
  crash_count: 1,
  crash_timestamp: 1589212345000000000,
};

describe('checkCallback', () => {
  it.each<[string, string, unknown, number, RegExp | undefined]>([
    [
      'a task success',
      taskPath,
      taskCompletedBody(TASK, { failed: false, failureReason: '' }),
      200,
      undefined,
    ],
    ['a task for another guid', taskPath, { task_guid: 'x', failed: true, failure_reason: '' }, 400, /:21/],
    ['failed as a string', taskPath, { task_guid: TASK, failed: 'true', failure_reason: '' }, 200, /:41/],
    ['no failure_reason', taskPath, { task_guid: TASK, failed: true }, 200, /:42/],
    [
      'a failure_reason over varchar(4096)',
      taskPath,
      { task_guid: TASK, failed: true, failure_reason: 'x'.repeat(4097) },
      200,
      /tasks.failure_reason holds 4096/,
    ],
    [
      'the 969-character log tail CC could not store',
      stagingPath,
      { error: { id: 'StagingError', message: 'y'.repeat(969) } },
      200,
      /builds.error_description holds 255 characters, not 984/,
    ],
    [
      "a long message under an id whose template has no place for it: CC's own text is stored",
      stagingPath,
      { error: { id: 'BuildpackCompileFailed', message: 'y'.repeat(969) } },
      200,
      undefined,
    ],
    [
      'an id CC does not keep',
      stagingPath,
      { error: { id: 'Oops', message: 'x' } },
      200,
      /build_model.rb:90/,
    ],
    ['an error without message', stagingPath, { error: { id: 'StagingError' } }, 400, /165-174/],
    ['a BBS-style body', stagingPath, { failed: true, failure_reason: 'x' }, 500, /:58/],
    [
      'a docker result without its image',
      stagingPath,
      {
        result: {
          lifecycle_type: 'docker',
          lifecycle_metadata: {},
          process_types: {},
          execution_metadata: '',
        },
      },
      200,
      /docker_image/,
    ],
    ['a crash Diego would send', crashPath, crash, 200, undefined],
    ['a crash in seconds', crashPath, { ...crash, crash_timestamp: 1589212345 }, 200, /nanoseconds/],
    ['a crash without exit_description', crashPath, { ...crash, exit_description: undefined }, 500, /:103/],
    [
      'a crash whose metadata exceeds MySQL text',
      crashPath,
      { ...crash, reason: 'z'.repeat(70_000) },
      200,
      /events.metadata/,
    ],
    ['not JSON', taskPath, 'nope', 400, /not JSON/],
  ])('%s', (_what, path, body, status, problem) => {
    const raw = typeof body === 'string' ? body : JSON.stringify(body);
    const verdict = checkCallback('POST', path, raw);
    expect(verdict?.status).toBe(status);
    if (problem) expect(verdict?.problems.join('\n')).toMatch(problem);
    else expect(verdict?.problems).toEqual([]);
  });

  it("passes the service's bodies at their bounds", () => {
    const long = 'é'.repeat(5000);
    const bodies: [string, unknown][] = [
      [taskPath, taskCompletedBody(TASK, { failed: true, failureReason: long })],
      [stagingPath, stagingCompletedBody({ failed: true, message: long })],
      [
        crashPath,
        crashReportBody({
          processGuid: PG,
          instance: 'app-0',
          index: 0,
          reason: 'CRASHED',
          exitStatus: 1,
          exitDescription: long,
          crashCount: 1,
          crashTimestamp: 1589212345,
        }),
      ],
    ];
    for (const [path, body] of bodies) {
      expect({ path, ...checkCallback('POST', path, JSON.stringify(body)) }).toEqual({
        path,
        status: 200,
        problems: [],
      });
    }
  });

  it('leaves other paths alone', () => {
    expect(checkCallback('GET', taskPath, '')).toBeUndefined();
    expect(checkCallback('POST', '/other', '{}')).toBeUndefined();
  });
});
