import { describe, expect, it } from '@jest/globals';
import { rolloutHeldUp, workloadDrift } from './drift.js';
import type { AppPodSummary, WorkloadSummary } from './watch-summaries.js';

const workload = (over: Partial<WorkloadSummary> = {}): WorkloadSummary => ({
  kind: 'deployment',
  processGuid: 'pg-1',
  name: 'app-dev-0123456789',
  namespace: 'cf-workloads',
  generation: 10,
  specGeneration: 1,
  rv: 100,
  ...over,
});

describe('workloadDrift', () => {
  it.each<[string, WorkloadSummary | undefined, WorkloadSummary | undefined, string | undefined]>([
    ['first seen (a list, a create): nothing to compare', undefined, workload(), undefined],
    ['deleted while held', workload(), undefined, 'deleted'],
    ['status only (no spec change)', workload(), workload({ rv: 101 }), undefined],
    [
      'spec changed, stamp kept: someone else (or our repair of that)',
      workload(),
      workload({ specGeneration: 2, rv: 101 }),
      'edited',
    ],
    [
      'spec changed with a newer stamp: our converge of a newer record',
      workload(),
      workload({ specGeneration: 2, generation: 11, rv: 101 }),
      undefined,
    ],
    [
      'a newer stamp alone (a metadata-only converge)',
      workload(),
      workload({ generation: 11, rv: 101 }),
      undefined,
    ],
    [
      'no metadata.generation known',
      workload({ specGeneration: undefined }),
      workload({ specGeneration: 2 }),
      undefined,
    ],
    [
      'an unstamped workload edited',
      workload({ generation: undefined }),
      workload({ generation: undefined, specGeneration: 2 }),
      'edited',
    ],
  ])('%s', (_, prev, next, expected) => {
    expect(workloadDrift(prev, next)).toBe(expected);
  });
});

const pod = (over: Partial<AppPodSummary> = {}): AppPodSummary => ({
  kind: 'app',
  processGuid: 'pg-1',
  name: 'app-dev-0123456789-0',
  createdS: 1,
  state: 'CRASHED',
  since: 0,
  placementError: undefined,
  changedAtS: 1,
  ordinal: 0,
  revision: 'app-old',
  unreported: undefined,
  rv: 5,
  ...over,
});

describe('rolloutHeldUp', () => {
  const sts = workload({ kind: 'statefulset', updateRevision: 'app-new' });
  it.each<[string, WorkloadSummary, AppPodSummary[], boolean]>([
    ['an old-revision pod not ready', sts, [pod()], true],
    ['an old-revision pod starting (CLAIMED)', sts, [pod({ state: 'CLAIMED' })], true],
    ['old pods all ready: left to the controller', sts, [pod({ state: 'RUNNING' })], false],
    ['a new-revision pod not ready: the new release', sts, [pod({ revision: 'app-new' })], false],
    ['the spec not yet seen by the controller', workload({ kind: 'statefulset' }), [pod()], false],
    ['a Deployment', workload({ updateRevision: 'app-new' }), [pod()], false],
    ['a pod with no revision', sts, [pod({ revision: undefined })], false],
    ['no pods', sts, [], false],
  ])('%s', (_, w, pods, expected) => {
    expect(rolloutHeldUp(w, pods)).toBe(expected);
  });
});
