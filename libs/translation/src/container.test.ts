import { describe, expect, it } from '@jest/globals';
import type { ResourceSizes } from './container.js';
import { containerResources, containerSecurityContext } from './container.js';
import type { ResourceRequirements, SecurityContext } from '@opi/kube-objects';

describe('containerResources', () => {
  it.each<[ResourceSizes, ResourceRequirements]>([
    [
      { memoryMb: 256, diskMb: 1024, cpuWeight: 25 },
      {
        requests: { memory: '256M', cpu: '25m', 'ephemeral-storage': '1024M' },
        limits: { memory: '256M', 'ephemeral-storage': '1024M' },
      },
    ],
    [
      { memoryMb: 1, diskMb: 1, cpuWeight: 100 },
      {
        requests: { memory: '1M', cpu: '100m', 'ephemeral-storage': '1M' },
        limits: { memory: '1M', 'ephemeral-storage': '1M' },
      },
    ],
  ])('%j', (sizes, expected) => {
    expect(containerResources(sizes)).toEqual(expected);
  });
});

describe('containerSecurityContext', () => {
  it.each<[boolean, SecurityContext]>([
    [true, { allowPrivilegeEscalation: false, runAsNonRoot: true }],
    [false, { allowPrivilegeEscalation: false, runAsNonRoot: false }],
  ])('runAsNonRoot=%s', (runAsNonRoot, expected) => {
    expect(containerSecurityContext(runAsNonRoot)).toEqual(expected);
  });
});
