import { describe, expect, it } from '@jest/globals';
import * as translation from '@opi/translation';

describe('@opi/translation', () => {
  it('exports the translation API (and no test fixtures)', () => {
    const names = Object.keys(translation);
    for (const name of [
      'workloadName',
      'registrySecretName',
      'labelsFor',
      'selectorFor',
      'APP_SELECTOR',
      'annotationsFor',
      'lrpToDeployment',
      'registrySecret',
      'registryServerOf',
      'pdbFor',
      'ownedBy',
      'lrpFromWorkload',
      'lrpToStatefulSet',
      'rolloutStep',
      'podToInstance',
      'assignIndexMap',
      'taskJobName',
      'taskToJob',
      'taskRegistrySecret',
      'TASK_SELECTOR',
      'stagingJobName',
      'stagingToJob',
      'STAGING_SELECTOR',
      'jobFinished',
      'taskOutcome',
      'stagingOutcome',
      'crashReportsFor',
      'reportedCrashesOf',
      'CRASHES_REPORTED_ANNOTATION',
    ]) {
      expect(names).toContain(name);
    }
    for (const fixture of ['sampleLrp', 'sampleTask', 'sampleStaging']) expect(names).not.toContain(fixture);
  });
});
