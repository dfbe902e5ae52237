import { describe, expect, it } from '@jest/globals';
import { containerStatusOf, latestTermination } from './container-status.js';
import type { ContainerStateTerminated, ContainerStatus, Pod } from '@opi/kube-objects';

const status = (name: string, extra: Partial<ContainerStatus> = {}): ContainerStatus => ({
  name,
  ready: false,
  restartCount: 0,
  image: 'i',
  imageID: '',
  ...extra,
});
const withStatuses = (statuses?: ContainerStatus[]): Pod => ({
  metadata: { name: 'p' },
  status: statuses ? { containerStatuses: statuses } : {},
});
const now: ContainerStateTerminated = { exitCode: 2, reason: 'Error' };
const before: ContainerStateTerminated = { exitCode: 137, reason: 'OOMKilled' };

describe('containerStatusOf', () => {
  it.each<[string, Pod, string | undefined]>([
    ['the named container', withStatuses([status('side'), status('opi')]), 'opi'],
    ['else the first', withStatuses([status('side'), status('other')]), 'side'],
    ['no statuses', withStatuses(), undefined],
    ['no status at all', { metadata: { name: 'p' } }, undefined],
  ])('%s', (_what, pod, expected) => {
    expect(containerStatusOf(pod, 'opi')?.name).toBe(expected);
  });
});

describe('latestTermination', () => {
  it.each<[string, Partial<ContainerStatus>, ContainerStateTerminated | undefined]>([
    ['the current one first', { state: { terminated: now }, lastState: { terminated: before } }, now],
    [
      'else the previous run',
      { state: { waiting: { reason: 'CrashLoopBackOff' } }, lastState: { terminated: before } },
      before,
    ],
    ['none', { state: { running: {} } }, undefined],
  ])('%s', (_what, extra, expected) => {
    expect(latestTermination(status('opi', extra))).toEqual(expected);
  });
});
