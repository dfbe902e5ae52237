import { describe, expect, it } from '@jest/globals';
import { type CrashReport, DIEGO_REASON_MAX } from '@opi/domain';
import {
  CRASHES_REPORTED_ANNOTATION,
  MAX_CRASH_REPORTS,
  NONE_REPORTED,
  crashReportsFor,
  hasUnreportedCrashes,
  reportedCrashesOf,
} from './crashes.js';
import type { ContainerState, ContainerStatus, Pod } from '@opi/kube-objects';

const T0 = '2020-05-11T15:52:25Z';
const T0_S = 1589212345;
const T1 = '2020-05-11T15:53:00Z';
const T1_S = 1589212380;
const T2 = '2020-05-11T15:54:00Z';
const T2_S = 1589212440;
const PROCESS_GUID = 'guid-version';
const NAME = 'app-dev-0123456789-abcde-fghij';

function pod(
  status: Partial<ContainerStatus> | undefined,
  annotations?: Record<string, string>,
  labels: Record<string, string> = { 'cloudfoundry.org/process_type': 'web' },
): Pod {
  return {
    metadata: { name: NAME, creationTimestamp: T0, labels, ...(annotations ? { annotations } : {}) },
    status: {
      phase: 'Running',
      startTime: T0,
      ...(status
        ? {
            containerStatuses: [
              { name: 'opi', ready: false, restartCount: 0, image: 'img', imageID: '', ...status },
            ],
          }
        : {}),
    },
  };
}
const exit = (exitCode: number, reason?: string, message?: string, finishedAt = T1): ContainerState => ({
  terminated: { exitCode, ...(reason ? { reason } : {}), ...(message ? { message } : {}), finishedAt },
});
const waiting = (reason: string, message?: string): ContainerState => ({
  waiting: { reason, ...(message ? { message } : {}) },
});
const running: ContainerState = { running: { startedAt: T2 } };

const base = { processGuid: PROCESS_GUID, instance: NAME, index: 2 };
const report = (crashCount: number, fields: Partial<CrashReport>): CrashReport => ({
  ...base,
  reason: 'CRASHED',
  exitStatus: 1,
  exitDescription: 'APP/PROC/WEB: Exited with status 1',
  crashTimestamp: T1_S,
  ...fields,
  crashCount,
});
const reports = (from: number, to: number, fields: Partial<CrashReport>) =>
  Array.from({ length: to - from + 1 }, (_, i) => report(from + i, fields));

describe('crashReportsFor', () => {
  it.each<[string, Pod, number, CrashReport[]]>([
    ['no status yet', pod(undefined), NONE_REPORTED, []],
    ['running, never crashed', pod({ state: running }), NONE_REPORTED, []],
    [
      'first exit, not yet restarted: reported with the restart',
      pod({ state: exit(1, 'Error') }),
      NONE_REPORTED,
      [],
    ],
    [
      'restarted once, running again',
      pod({ restartCount: 1, state: running, lastState: exit(1, 'Error') }),
      NONE_REPORTED,
      [report(1, {})],
    ],
    [
      'crash loop: every restart not yet reported, with the latest termination',
      pod({
        restartCount: 4,
        state: waiting('CrashLoopBackOff', 'back-off 40s'),
        lastState: exit(137, 'OOMKilled', undefined, T2),
      }),
      1,
      reports(2, 4, {
        exitStatus: 137,
        exitDescription: 'APP/PROC/WEB: Exited with status 137 (out of memory)',
        crashTimestamp: T2_S,
      }),
    ],
    [
      'terminated right now after restarts: the current termination, with its message',
      pod({ restartCount: 2, state: exit(2, 'Error', 'panic: boom\n', T2), lastState: exit(1, 'Error') }),
      1,
      [
        report(2, {
          exitStatus: 2,
          exitDescription: 'APP/PROC/WEB: Exited with status 2: panic: boom',
          crashTimestamp: T2_S,
        }),
      ],
    ],
    [
      'an app that exited 0 crashed too (CF apps do not end)',
      pod({ restartCount: 1, state: running, lastState: exit(0, 'Completed') }),
      0,
      [report(1, { exitStatus: 0, exitDescription: 'APP/PROC/WEB: Exited with status 0' })],
    ],
    [
      'only CrashLoopBackOff known (the termination lost)',
      pod({ restartCount: 3, state: waiting('CrashLoopBackOff', 'back-off 20s') }),
      2,
      [
        report(3, {
          exitStatus: 0,
          exitDescription: 'APP/PROC/WEB: CrashLoopBackOff: back-off 20s',
          crashTimestamp: T0_S,
        }),
      ],
    ],
    [
      'nothing known but the restart: dated by the current run',
      pod({ restartCount: 1, state: running }),
      NONE_REPORTED,
      [report(1, { exitStatus: 0, exitDescription: 'APP/PROC/WEB: crashed', crashTimestamp: T2_S })],
    ],
    [
      'all restarts already reported',
      pod({ restartCount: 3, state: running, lastState: exit(1, 'Error') }),
      3,
      [],
    ],
    [
      'a marker above the restart count is kept',
      pod({ restartCount: 1, state: running, lastState: exit(1, 'Error') }),
      5,
      [],
    ],
    [
      `many unreported restarts: only the latest ${MAX_CRASH_REPORTS}`,
      pod({ restartCount: 25, state: waiting('CrashLoopBackOff'), lastState: exit(1, 'Error') }),
      NONE_REPORTED,
      reports(16, 25, {}),
    ],
    [
      'image pull failure, nothing reported: one report, crash_count 0',
      pod({ state: waiting('ErrImagePull', 'pull access denied for nope') }),
      NONE_REPORTED,
      [
        report(0, {
          exitStatus: 0,
          exitDescription: 'APP/PROC/WEB: ErrImagePull: pull access denied for nope',
          crashTimestamp: T0_S,
        }),
      ],
    ],
    [
      'image pull back-off already reported',
      pod({ state: waiting('ImagePullBackOff', 'Back-off pulling image "nope"') }),
      0,
      [],
    ],
    [
      'invalid image name, no message',
      pod({ state: waiting('InvalidImageName') }),
      NONE_REPORTED,
      [
        report(0, {
          exitStatus: 0,
          exitDescription: 'APP/PROC/WEB: InvalidImageName',
          crashTimestamp: T0_S,
        }),
      ],
    ],
    [
      'a root image refused by runAsNonRoot',
      pod({
        state: waiting('CreateContainerConfigError', 'container has runAsNonRoot and image will run as root'),
      }),
      NONE_REPORTED,
      [
        report(0, {
          exitStatus: 0,
          exitDescription:
            'APP/PROC/WEB: CreateContainerConfigError: container has runAsNonRoot and image will run as root',
          crashTimestamp: T0_S,
        }),
      ],
    ],
    ['still creating: not a crash', pod({ state: waiting('ContainerCreating') }), NONE_REPORTED, []],
    [
      'a worker process: its own log source',
      pod({ restartCount: 1, state: running, lastState: exit(3, 'Error') }, undefined, {
        'cloudfoundry.org/process_type': 'worker',
      }),
      NONE_REPORTED,
      [report(1, { exitStatus: 3, exitDescription: 'APP/PROC/WORKER: Exited with status 3' })],
    ],
    [
      "no process type label: Diego's words without the source",
      pod({ restartCount: 1, state: running, lastState: exit(1, 'Error') }, undefined, {}),
      NONE_REPORTED,
      [report(1, { exitDescription: 'Exited with status 1' })],
    ],
    [
      'a termination message of many lines: one line, the whole of it',
      pod({ restartCount: 1, state: running, lastState: exit(1, 'Error', 'boom\n  at main.js:3\n') }),
      NONE_REPORTED,
      [report(1, { exitDescription: 'APP/PROC/WEB: Exited with status 1: boom at main.js:3' })],
    ],
    [
      'restarts after a reported pull failure',
      pod({ restartCount: 2, state: running, lastState: exit(1, 'Error') }),
      0,
      reports(1, 2, {}),
    ],
  ])('%s', (_what, p, already, expected) => {
    expect(crashReportsFor(p, PROCESS_GUID, 2, already)).toEqual(expected);
    expect(hasUnreportedCrashes(p, already)).toBe(expected.length > 0);
  });

  it(`keeps a 4 KiB termination message within Diego's ${DIEGO_REASON_MAX} characters`, () => {
    const message = 'é'.repeat(4096);
    const p = pod({ restartCount: 1, state: running, lastState: exit(1, 'Error', message) });
    const [r] = crashReportsFor(p, PROCESS_GUID, 0, NONE_REPORTED);
    expect(r?.exitDescription).toHaveLength(DIEGO_REASON_MAX);
    expect(r?.exitDescription).toMatch(/^APP\/PROC\/WEB: Exited with status 1: é+…$/);
  });

  it('reports each crash once when the marker is raised to each report sent', () => {
    let marker = NONE_REPORTED;
    const seen: number[] = [];
    for (const restartCount of [0, 1, 1, 3, 3, 4]) {
      const p = pod({ restartCount, state: waiting('CrashLoopBackOff'), lastState: exit(1, 'Error') });
      for (const r of crashReportsFor(p, PROCESS_GUID, 0, marker)) {
        seen.push(r.crashCount);
        marker = Math.max(marker, r.crashCount);
      }
    }
    expect(seen).toEqual([1, 2, 3, 4]);
  });
});

describe('reportedCrashesOf', () => {
  it.each<[string, Record<string, string> | undefined, number]>([
    ['no annotations', undefined, NONE_REPORTED],
    ['another annotation only', { other: '3' }, NONE_REPORTED],
    ['-1', { [CRASHES_REPORTED_ANNOTATION]: '-1' }, -1],
    ['0', { [CRASHES_REPORTED_ANNOTATION]: '0' }, 0],
    ['12', { [CRASHES_REPORTED_ANNOTATION]: '12' }, 12],
    ['not a number', { [CRASHES_REPORTED_ANNOTATION]: 'many' }, NONE_REPORTED],
    ['a fraction', { [CRASHES_REPORTED_ANNOTATION]: '1.5' }, NONE_REPORTED],
    ['a leading zero', { [CRASHES_REPORTED_ANNOTATION]: '01' }, NONE_REPORTED],
    ['empty', { [CRASHES_REPORTED_ANNOTATION]: '' }, NONE_REPORTED],
    ['absurdly large', { [CRASHES_REPORTED_ANNOTATION]: '1'.repeat(30) }, NONE_REPORTED],
  ])('%s → %s', (_what, annotations, expected) => {
    expect(reportedCrashesOf(pod(undefined, annotations))).toBe(expected);
  });

  it('is the annotation crashes-reported', () => {
    expect(CRASHES_REPORTED_ANNOTATION).toBe('opi.cloudfoundry.org/crashes-reported');
  });
});
