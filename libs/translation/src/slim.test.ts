import { describe, expect, it } from '@jest/globals';
import { crashReportsFor, reportedCrashesOf } from './crashes.js';
import { podToInstance } from './instances.js';
import { jobFinished, taskOutcome } from './job-outcome.js';
import { sampleTask } from './job.fixture.js';
import type { Pod } from '@opi/kube-objects';
import {
  LABEL_GUID,
  LABEL_MANAGED_BY,
  LABEL_PROCESS_TYPE,
  LABEL_SOURCE_TYPE,
  LABEL_VERSION,
} from './labels.js';
import { lrp, opi, pods } from './pod.fixture.js';
import { slimJob, slimPod } from './slim.js';
import { taskToJob } from './task-job.js';

describe('slimPod', () => {
  it.each(pods)('%s: the same instance and crash reports, from far fewer bytes', (_name, full) => {
    const slim = slimPod(full);
    expect(podToInstance(slim, 2)).toEqual(podToInstance(full, 2));
    expect(reportedCrashesOf(slim)).toBe(reportedCrashesOf(full));
    expect(crashReportsFor(slim, lrp.processGuid, 2, reportedCrashesOf(slim))).toEqual(
      crashReportsFor(full, lrp.processGuid, 2, reportedCrashesOf(full)),
    );
    expect(slim.metadata).not.toHaveProperty('managedFields');
    expect(slim.metadata.resourceVersion).toBe('42');
    expect(slim.metadata.labels).toEqual({
      [LABEL_GUID]: full.metadata.labels?.[LABEL_GUID],
      [LABEL_VERSION]: full.metadata.labels?.[LABEL_VERSION],
      [LABEL_SOURCE_TYPE]: full.metadata.labels?.[LABEL_SOURCE_TYPE],
      [LABEL_PROCESS_TYPE]: full.metadata.labels?.[LABEL_PROCESS_TYPE],
      [LABEL_MANAGED_BY]: full.metadata.labels?.[LABEL_MANAGED_BY],
    });
    expect(JSON.stringify(slim).length).toBeLessThan(JSON.stringify(full).length / 2);
  });

  it("keeps what a task's outcome is read from (termination message, exit code)", () => {
    const job = taskToJob(sampleTask(), { runAsNonRoot: true });
    const failed: Pod = {
      metadata: { name: 'task-pod', labels: job.spec.template.metadata?.labels ?? {} },
      spec: job.spec.template.spec,
      status: {
        phase: 'Failed',
        containerStatuses: [
          opi({
            state: { terminated: { exitCode: 3, reason: 'Error', message: 'boom' } },
          }),
        ],
      },
    };
    const finished = { ...job, status: { failed: 1 } };
    expect(taskOutcome(finished, [slimPod(failed)])).toEqual(taskOutcome(finished, [failed]));
    const withJobName = { ...failed, metadata: { ...failed.metadata, labels: { 'job-name': 'task-x' } } };
    expect(slimPod(withJobName).metadata.labels).toEqual({ 'job-name': 'task-x' });
    expect(taskOutcome(finished, [failed])).toBeDefined();
  });
});

describe('slimJob', () => {
  it('answers finished and the outcome as the whole Job, without env, probes or the pod template', () => {
    const job = taskToJob(sampleTask(), { runAsNonRoot: true });
    const stored = {
      ...job,
      metadata: { ...job.metadata, namespace: 'cf-workloads', uid: 'u1', resourceVersion: '7' },
      status: {
        failed: 1,
        conditions: [{ type: 'Failed', status: 'True' as const, reason: 'BackoffLimitExceeded' }],
      },
    };
    const slim = slimJob(stored);
    expect(jobFinished(slim)).toBe(jobFinished(stored));
    expect(taskOutcome(slim, [])).toEqual(taskOutcome(stored, []));
    expect(slim.metadata.annotations).toEqual(stored.metadata.annotations);
    expect(slim.metadata.labels).toEqual(stored.metadata.labels);
    expect(slim.spec?.template.spec?.containers).toEqual([
      { name: stored.spec.template.spec?.containers[0]?.name, image: sampleTask().spec.image },
    ]);
    expect(JSON.stringify(slim)).not.toContain('rake db:migrate');
    expect(JSON.stringify(slim).length).toBeLessThan(JSON.stringify(stored).length / 2);
  });
});
