/** Which paths reach the operator endpoints' router (everything else goes straight to CC's routes). */
import { describe, expect, it } from '@jest/globals';
import { isOperatorPath } from './app.js';

describe('isOperatorPath', () => {
  it.each([
    ['/healthz', true],
    ['/readyz', true],
    ['/metrics', true],
    ['/METRICS', true],
    ['/healthz/', true],
    ['/admin/queues', true],
    ['/admin/queues/', true],
    ['/admin/queues/api/queues', true],
    ['/admin/queuesx', false],
    ['/apps', false],
    ['/apps/healthz', false],
    ['/', false],
    ['/healthz//', false],
  ])('%s: %s', (path, expected) => {
    expect(isOperatorPath(path)).toBe(expected);
  });
});
