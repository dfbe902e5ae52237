import { describe, expect, it } from '@jest/globals';
import type { DesiredLrp, HealthCheckType } from '@opi/domain';
import type { Container, Probe } from '@opi/kube-objects';
import { sampleLrp } from './lrp.fixture.js';
import { probesFor, startupFailureThreshold } from './probes.js';

describe('startupFailureThreshold', () => {
  it.each<[number, number, number]>([
    // [health_check_timeout_ms, start_timeout_ms, failures at 2 s]
    [60_000, 0, 30],
    [61_000, 0, 31],
    [1, 0, 1],
    [30_000, 90_000, 15],
    [0, 90_000, 45],
    [0, 3_000, 2],
    // Found by the fuzz tests: a count past int32 made the Deployment invalid.
    [Number.MAX_SAFE_INTEGER, 0, 2 ** 31 - 1],
    [0, 2 ** 53 - 1, 2 ** 31 - 1],
    [4_294_967_296_000, 0, 2 ** 31 - 1],
    [0, 0, 30],
  ])('timeout %d ms, start timeout %d ms → %d', (timeoutMs, startTimeoutMs, expected) => {
    const lrp = sampleLrp({ healthCheck: { type: 'port', httpEndpoint: '', timeoutMs }, startTimeoutMs });
    expect(startupFailureThreshold(lrp)).toBe(expected);
  });
});

describe('probesFor', () => {
  const withCheck = (type: HealthCheckType, ports: number[], httpEndpoint = '/health'): DesiredLrp =>
    sampleLrp({ ports, healthCheck: { type, httpEndpoint, timeoutMs: 10_000 }, startTimeoutMs: 0 });
  const all = (check: Probe): Pick<Container, 'startupProbe' | 'livenessProbe' | 'readinessProbe'> => ({
    startupProbe: { ...check, periodSeconds: 2, failureThreshold: 5 },
    livenessProbe: { ...check, periodSeconds: 10, failureThreshold: 3 },
    readinessProbe: { ...check, periodSeconds: 5, failureThreshold: 1 },
  });

  it.each<[string, DesiredLrp, ReturnType<typeof probesFor>]>([
    ['port → TCP on the first port', withCheck('port', [8080, 9090]), all({ tcpSocket: { port: 8080 } })],
    [
      'http → GET on the endpoint at the first port',
      withCheck('http', [8080, 9090]),
      all({ httpGet: { path: '/health', port: 8080 } }),
    ],
    [
      'http without an endpoint → GET /',
      withCheck('http', [8080], ''),
      all({ httpGet: { path: '/', port: 8080 } }),
    ],
    ['process → none', withCheck('process', [8080]), {}],
    ['none → none', withCheck('none', [8080]), {}],
    ['port without a port → none', withCheck('port', []), {}],
  ])('%s', (_what, lrp, expected) => {
    expect(probesFor(lrp)).toEqual(expected);
  });

  it('gives each probe its own check object', () => {
    const p = probesFor(withCheck('port', [8080]));
    expect(p.startupProbe!.tcpSocket).not.toBe(p.livenessProbe!.tcpSocket);
  });
});
