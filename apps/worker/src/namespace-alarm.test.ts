import { describe, expect, it } from '@jest/globals';
import { KubeApiError } from '@opi/kube';
import type { Logger } from '@opi/logging';
import { NamespaceAlarm } from './namespace-alarm.js';

function setUp() {
  const lines: { level: string; msg: string }[] = [];
  const at =
    (level: string) =>
    (_obj: unknown, msg: string): void => {
      lines.push({ level, msg });
    };
  const logger = {
    error: at('error'),
    info: at('info'),
    debug: at('debug'),
    warn: at('warn'),
  } as unknown as Logger;
  const published: (string | undefined)[] = [];
  const store = {
    setClusterProblem: (problem: string | undefined) => {
      published.push(problem);
      return Promise.resolve();
    },
  };
  return { alarm: new NamespaceAlarm({ namespace: 'cf-workloads', logger, store }), lines, published };
}

const missing = new KubeApiError({
  status: 404,
  reason: 'NotFound',
  transient: false,
  message: 'namespaces "cf-workloads" not found',
});

describe('NamespaceAlarm', () => {
  it('says a missing namespace once, publishes it each time, and says once when it is over', () => {
    const { alarm, lines, published } = setUp();
    expect(alarm.noticed(missing)).toBe(true);
    expect(alarm.noticed(missing)).toBe(true);
    expect(alarm.noticed(missing)).toBe(true);
    expect(lines).toEqual([
      {
        level: 'error',
        msg:
          'namespace cf-workloads does not exist: nothing can run until it is created ' +
          '(kubectl create namespace cf-workloads) or OPI_NAMESPACE names one that exists',
      },
    ]);
    expect(published).toHaveLength(3);
    alarm.cleared();
    alarm.cleared();
    expect(lines.slice(1)).toEqual([{ level: 'info', msg: 'namespace cf-workloads exists now' }]);
    expect(published.at(-1)).toBeUndefined();
    expect(published).toHaveLength(4);
  });

  it('ignores other errors and stays quiet when nothing was raised', () => {
    const { alarm, lines, published } = setUp();
    const other = new KubeApiError({
      status: 503,
      reason: 'ServiceUnavailable',
      transient: true,
      message: 'x',
    });
    expect(alarm.noticed(other)).toBe(false);
    alarm.cleared();
    expect(lines).toEqual([]);
    expect(published).toEqual([]);
  });
});
