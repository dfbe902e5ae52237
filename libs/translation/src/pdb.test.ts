import { describe, expect, it } from '@jest/globals';
import { labelsFor, selectorFor } from './labels.js';
import { sampleLrp } from './lrp.fixture.js';
import { workloadName } from './names.js';
import { pdbFor } from './pdb.js';

describe('pdbFor', () => {
  it.each([0, 1])('is undefined with %d instance(s)', (instances) => {
    expect(pdbFor(sampleLrp({ instances }))).toBeUndefined();
  });

  it.each([2, 3, 100])('keeps half of %d instances available', (instances) => {
    const lrp = sampleLrp({ instances });
    expect(pdbFor(lrp)).toEqual({
      apiVersion: 'policy/v1',
      kind: 'PodDisruptionBudget',
      metadata: { name: workloadName(lrp), namespace: 'cf-workloads', labels: labelsFor(lrp) },
      spec: { minAvailable: '50%', selector: selectorFor(lrp) },
    });
  });
});
