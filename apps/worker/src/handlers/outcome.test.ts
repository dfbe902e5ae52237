import { describe, expect, it } from '@jest/globals';
import { type Outcome, resultOf } from './outcome.js';

describe('resultOf', () => {
  it.each<[Outcome, string]>([
    [{ kind: 'no-record' }, 'no record'],
    [{ kind: 'skipped', why: 'already reported (its Job says so)' }, 'already reported (its Job says so)'],
    [
      {
        kind: 'converged',
        action: 'created',
        workload: 'deployment',
        namespace: 'ns',
        name: 'web',
        generation: 3,
      },
      'created deployment ns/web (generation 3)',
    ],
    [{ kind: 'stopped', deployments: 1, statefulsets: 0 }, 'stopped: 1 deployment(s) deleted'],
    [
      { kind: 'stopped', deployments: 1, statefulsets: 2 },
      'stopped: 1 deployment(s), 2 statefulset(s) deleted',
    ],
    [{ kind: 'instance-stopped', pod: 'web-0', result: 'already gone' }, 'pod web-0 already gone'],
    [{ kind: 'rollout-checked', state: 'rolled-out', deleted: 0, waiting: 0, last: true }, 'rolled out'],
    [
      { kind: 'rollout-checked', state: 'not-observed', deleted: 0, waiting: 0, last: true },
      'not observed by the controller yet; last check',
    ],
    [
      { kind: 'rollout-checked', state: 'rolling', deleted: 2, waiting: 1, last: false },
      'deleted 2 old pod(s) not ready, 1 ready left to the controller',
    ],
    [{ kind: 'job-created', namespace: 'ns', name: 'task-1' }, 'job ns/task-1'],
    [{ kind: 'job-deleted', result: 'absent' }, 'job absent'],
    [{ kind: 'staged' }, 'staged'],
    [{ kind: 'staging-failed', message: 'no such image' }, 'staging failed: no such image'],
    [{ kind: 'delivered', status: 200 }, 'delivered (200)'],
    [{ kind: 'refused', status: 400 }, 'refused by CC (400)'],
  ])('%j → %j', (outcome, line) => {
    expect(resultOf(outcome)).toBe(line);
  });

  it("is a sync's report itself", () => {
    const report = {
      workloads: 1,
      pods: 2,
      converging: 0,
      adopted: 0,
      twinsDeleted: 0,
      jobs: { jobs: 0, reporting: 0, deleted: 0, rerun: 0 },
      durationMs: 5,
    };
    expect(resultOf({ kind: 'synced', report })).toBe(report);
  });
});
