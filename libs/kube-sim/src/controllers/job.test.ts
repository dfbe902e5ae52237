import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import type { KubeObject } from '../types.js';
import type { Container } from './pods.js';
import {
  type Harness,
  container,
  env,
  eventually,
  podTemplate,
  startHarness,
  status,
} from './test-harness.js';

let h: Harness;
beforeEach(async () => {
  h = await startHarness();
});
afterEach(async () => {
  await h.stop();
});

interface JobStatus {
  active?: number;
  ready?: number;
  succeeded?: number;
  failed?: number;
  terminating?: number;
  startTime?: string;
  completionTime?: string;
  conditions?: {
    type: string;
    status: string;
    reason?: string;
    message?: string;
    lastProbeTime: string;
    lastTransitionTime: string;
  }[];
}

function createJob(name: string, containers: Container[], spec: Record<string, unknown> = {}): KubeObject {
  return h.create('batch', 'jobs', {
    apiVersion: 'batch/v1',
    kind: 'Job',
    metadata: { name },
    spec: { template: podTemplate({}, containers, { restartPolicy: 'Never' }), ...spec },
  });
}

const jobStatus = (name: string) => (h.get('batch', 'jobs', name)?.['status'] ?? {}) as JobStatus;
const condition = (name: string, type: string) =>
  jobStatus(name).conditions?.find((c) => c.type === type && c.status === 'True');
const failing = (vars: Record<string, string> = {}) =>
  container({ env: env({ KUBESIM_BEHAVIOUR: 'fail', ...vars }) });

describe('Job controller', () => {
  it('runs pods to completion', async () => {
    const job = createJob('task', [container()], { completions: 2 });
    await eventually(() => condition('task', 'Complete'), 'Complete');
    const s = jobStatus('task');
    expect(s).toMatchObject({ succeeded: 2, ready: 0, terminating: 0 });
    expect(s.active).toBeUndefined();
    expect(s.failed).toBeUndefined();
    expect(s.startTime).toBeDefined();
    expect(s.completionTime).toBeDefined();
    expect(condition('task', 'Complete')).toMatchObject({ status: 'True', reason: 'CompletionsReached' });
    const pods = h.pods();
    expect(pods).toHaveLength(2);
    for (const p of pods) {
      expect(p.metadata.name).toMatch(/^task-[bcdfghjklmnpqrstvwxz2456789]{5}$/);
      expect(p.metadata.labels).toMatchObject({
        'job-name': 'task',
        'batch.kubernetes.io/controller-uid': job.metadata.uid,
      });
      expect(p.metadata.ownerReferences?.[0]).toMatchObject({ kind: 'Job', name: 'task', controller: true });
      expect(status(p).phase).toBe('Succeeded');
    }
    const reasons = h.events('task').map((e) => e['reason']);
    expect(reasons.filter((r) => r === 'SuccessfulCreate')).toHaveLength(2);
    expect(reasons).toContain('Completed');
  });

  it('fails after one pod with backoffLimit 0', async () => {
    createJob('once', [failing()], { backoffLimit: 0 });
    const failed = await eventually(() => condition('once', 'Failed'), 'Failed');
    expect(failed).toMatchObject({
      reason: 'BackoffLimitExceeded',
      message: 'Job has reached the specified backoff limit',
    });
    expect(jobStatus('once').failed).toBe(1);
    expect(h.pods()).toHaveLength(1);
    expect(h.events('once').find((e) => e['reason'] === 'BackoffLimitExceeded')?.['type']).toBe('Warning');
  });

  it('replaces failed pods until failures pass backoffLimit', async () => {
    createJob('retry', [failing({ KUBESIM_EXIT_CODE: '2' })], { backoffLimit: 2 });
    await eventually(() => condition('retry', 'Failed'), 'Failed');
    expect(jobStatus('retry').failed).toBe(3);
    expect(h.pods()).toHaveLength(3);
    for (const p of h.pods()) expect(status(p).containerStatuses?.[0]?.state.terminated?.exitCode).toBe(2);
  });

  it('fails a Job active longer than activeDeadlineSeconds and stops its pods', async () => {
    createJob('slow', [container({ env: env({ KUBESIM_RUN_MS: '60000' }) })], { activeDeadlineSeconds: 1 });
    await eventually(() => jobStatus('slow').active === 1, 'running');
    const failed = await eventually(() => condition('slow', 'Failed'), 'DeadlineExceeded');
    expect(failed).toMatchObject({
      reason: 'DeadlineExceeded',
      message: 'Job was active longer than specified deadline',
    });
    await eventually(() => h.pods().length === 0, 'pod stopped');
  });

  it('deletes a finished Job and its pods after ttlSecondsAfterFinished', async () => {
    createJob('brief', [container()], { ttlSecondsAfterFinished: 0 });
    await eventually(() => !h.get('batch', 'jobs', 'brief') && h.pods().length === 0, 'job and pods gone');
  });

  it('runs parallelism pods at once', async () => {
    createJob('wide', [container({ env: env({ KUBESIM_RUN_MS: '300' }) })], {
      completions: 4,
      parallelism: 2,
    });
    await eventually(() => jobStatus('wide').active === 2, 'two active');
    await eventually(() => condition('wide', 'Complete'), 'Complete');
    expect(jobStatus('wide').succeeded).toBe(4);
  });
});
