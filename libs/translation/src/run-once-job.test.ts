import { describe, expect, it } from '@jest/globals';
import type { Container } from '@opi/kube-objects';
import { ANNOTATION_REPORTED_AT, jobName, reportedAt, runOnceJob } from './run-once-job.js';

describe('jobName', () => {
  it.each<[string, string, string]>([
    ['task', 'abc', 'task-abc-ba7816bf8f'],
    ['stage', 'abc', 'stage-abc-ba7816bf8f'],
    ['task', '', 'task-e3b0c44298'],
  ])('%j, %j → %j', (kind, guid, expected) => {
    expect(jobName(kind, guid)).toBe(expected);
  });
});

describe('runOnceJob', () => {
  const container: Container = { name: 'c', image: 'busybox' };
  const parts = { name: 'j', namespace: 'ns', labels: { a: 'b' }, annotations: { c: 'd' }, container };

  it('runs one pod once, never retried, without API credentials', () => {
    expect(runOnceJob(parts)).toEqual({
      apiVersion: 'batch/v1',
      kind: 'Job',
      metadata: { name: 'j', namespace: 'ns', labels: { a: 'b' }, annotations: { c: 'd' } },
      spec: {
        parallelism: 1,
        completions: 1,
        backoffLimit: 0,
        template: {
          metadata: { labels: { a: 'b' } },
          spec: {
            containers: [container],
            restartPolicy: 'Never',
            automountServiceAccountToken: false,
            enableServiceLinks: false,
          },
        },
      },
    });
  });

  it.each<[string | undefined, { name: string }[] | undefined]>([
    ['j-registry', [{ name: 'j-registry' }]],
    ['', undefined],
    [undefined, undefined],
  ])('image pull secret %j', (imagePullSecret, expected) => {
    const job = runOnceJob({ ...parts, ...(imagePullSecret !== undefined ? { imagePullSecret } : {}) });
    expect(job.spec.template.spec?.imagePullSecrets).toEqual(expected);
  });
});

describe('reportedAt', () => {
  const job = (annotations?: Record<string, string>) => ({ metadata: { name: 'task-x', annotations } });
  it.each<[string, Record<string, string> | undefined, string | undefined]>([
    ['not reported', undefined, undefined],
    ['other annotations only', { other: 'x' }, undefined],
    ['an empty mark is no mark', { [ANNOTATION_REPORTED_AT]: '' }, undefined],
    ['reported', { [ANNOTATION_REPORTED_AT]: '2026-12-07T05:00:00.000Z' }, '2026-12-07T05:00:00.000Z'],
  ])('%s', (_what, annotations, expected) => {
    expect(reportedAt(job(annotations))).toBe(expected);
  });
  it('is undefined for no Job', () => {
    expect(reportedAt(undefined)).toBeUndefined();
  });
});
