import { describe, expect, it } from '@jest/globals';
import { DIEGO_REASON_MAX } from '@opi/domain';
import { mayBeProbeKilled, probeKillDescription } from './crashes.js';
import type { CoreEvent, Pod, Probe } from '@opi/kube-objects';
import { goDuration, healthcheckWords } from './probe-kills.js';

const UID = 'pod-uid-1';
const STARTED = '2020-05-11T15:52:25Z';
const KILLED = '2020-05-11T15:53:25Z';
const FINISHED = '2020-05-11T15:53:27Z';

const tcp: Probe = { tcpSocket: { port: 8080 }, periodSeconds: 2, failureThreshold: 30 };
const http: Probe = { httpGet: { path: '/health', port: 8080 }, periodSeconds: 10, failureThreshold: 3 };

function pod(exitCode = 137, reason = 'Error', probes = { startupProbe: tcp, livenessProbe: http }): Pod {
  return {
    metadata: { name: 'web-0', uid: UID, labels: { 'cloudfoundry.org/process_type': 'web' } },
    spec: { containers: [{ name: 'opi', image: 'img', ...probes }] },
    status: {
      containerStatuses: [
        {
          name: 'opi',
          ready: false,
          restartCount: 1,
          image: 'img',
          imageID: '',
          state: { running: { startedAt: FINISHED } },
          lastState: { terminated: { exitCode, reason, startedAt: STARTED, finishedAt: FINISHED } },
        },
      ],
    },
  };
}

function event(reason: string, message: string, at = KILLED, uid = UID): CoreEvent {
  return {
    metadata: { name: `web-0.${reason}` },
    involvedObject: { kind: 'Pod', name: 'web-0', uid, fieldPath: 'spec.containers{opi}' },
    reason,
    message,
    type: reason === 'Killing' ? 'Normal' : 'Warning',
    lastTimestamp: at,
  };
}

const startupKill = [
  event(
    'Unhealthy',
    'Startup probe failed: dial tcp 127.0.0.5:8080: connect: connection refused',
    '2020-05-11T15:53:20Z',
  ),
  event('Killing', 'Container opi failed startup probe, will be restarted'),
];

describe('a probe kill in Diego words (executor health_check_step.go, healthcheck.go)', () => {
  it.each<[string, Pod, CoreEvent[], string | undefined]>([
    [
      'a startup probe that never passed',
      pod(),
      startupKill,
      'APP/PROC/WEB: Instance never healthy after 1m0s: Failed to make TCP connection to port 8080: connection refused',
    ],
    [
      'a liveness probe answered 500',
      pod(),
      [
        event(
          'Unhealthy',
          'Liveness probe failed: HTTP probe failed with statuscode: 500',
          '2020-05-11T15:53:24Z',
        ),
        event('Killing', 'Container opi failed liveness probe, will be restarted'),
      ],
      "APP/PROC/WEB: Instance became unhealthy: Failed to make HTTP request to '/health' on port 8080: received status code 500",
    ],
    [
      'a liveness probe timed out',
      pod(),
      [
        event(
          'Unhealthy',
          'Liveness probe failed: Get "http://127.0.0.5:8080/health": context deadline exceeded (Client.Timeout exceeded while awaiting headers)',
        ),
        event('Killing', 'Container opi failed liveness probe, will be restarted'),
      ],
      "APP/PROC/WEB: Instance became unhealthy: Failed to make HTTP request to '/health' on port 8080: timed out after 1.00 seconds",
    ],
    [
      'a kill without a probe failure said: no kill of ours',
      pod(),
      [event('Killing', 'Stopping container opi')],
      undefined,
    ],
    ['an OOM kill stays an exit', pod(137, 'OOMKilled'), startupKill, undefined],
    ['an exit of the app itself stays an exit', pod(1), startupKill, undefined],
    [
      "another pod's events do not count",
      pod(),
      startupKill.map((e) => ({ ...e, involvedObject: { ...e.involvedObject, uid: 'other' } })),
      undefined,
    ],
    [
      'a kill from before the run that ended does not count',
      pod(),
      startupKill.map((e) => ({ ...e, lastTimestamp: '2020-05-11T15:50:00Z' })),
      undefined,
    ],
    [
      'a kill with no probe output said: the words alone',
      pod(),
      [event('Killing', 'Container opi failed startup probe, will be restarted')],
      'APP/PROC/WEB: Instance never healthy after 1m0s',
    ],
  ])('%s', (_what, p, events, words) => {
    expect(probeKillDescription(p, events)).toBe(words);
  });

  it('reads Events only for a signal exit that is not OOM', () => {
    expect(mayBeProbeKilled(pod())).toBe(true);
    expect(mayBeProbeKilled(pod(143))).toBe(true);
    expect(mayBeProbeKilled(pod(137, 'OOMKilled'))).toBe(false);
    expect(mayBeProbeKilled(pod(1))).toBe(false);
  });

  it('keeps a long probe output within Diego bound', () => {
    const long = [
      event('Unhealthy', `Startup probe failed: ${'x'.repeat(5000)}`, '2020-05-11T15:53:20Z'),
      startupKill[1] as CoreEvent,
    ];
    expect(probeKillDescription(pod(), long)?.length).toBeLessThanOrEqual(DIEGO_REASON_MAX);
  });

  it.each([
    [2, '2s'],
    [60, '1m0s'],
    [90, '1m30s'],
    [3600, '1h0m0s'],
    [3725, '1h2m5s'],
  ])("prints %i s as Go's Duration does: %s", (s, text) => {
    expect(goDuration(s)).toBe(text);
  });

  it.each<[Probe, string, string]>([
    [
      tcp,
      'dial tcp 127.0.0.5:8080: i/o timeout',
      'Failed to make TCP connection to port 8080: timed out after 1.00 seconds',
    ],
    [tcp, 'something else', 'Failed to make TCP connection to port 8080: something else'],
    [
      http,
      'Get "http://127.0.0.5:8080/health": dial tcp 127.0.0.5:8080: connect: connection refused',
      "Failed to make HTTP request to '/health' on port 8080: connection refused",
    ],
    [{ exec: { command: ['true'] } }, 'exit 1', 'exit 1'],
  ])('words the kubelet output as the healthcheck does', (probe, output, words) => {
    expect(healthcheckWords(probe, output)).toBe(words);
  });
});
