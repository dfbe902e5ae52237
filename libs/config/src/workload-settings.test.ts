import { describe, expect, it } from '@jest/globals';
import { SettingsError, parseSettings } from './settings.js';

describe('workload settings', () => {
  it('default to Deployments, with the index variables on should the mode change', () => {
    expect(parseSettings({}).workloads).toEqual({ kind: 'deployment', instanceIndexEnv: true });
  });

  it.each<[Record<string, string>, { kind: string; instanceIndexEnv: boolean }]>([
    [{ OPI_WORKLOAD_KIND: 'statefulset' }, { kind: 'statefulset', instanceIndexEnv: true }],
    [
      { OPI_WORKLOAD_KIND: 'statefulset', OPI_INSTANCE_INDEX_ENV: 'off' },
      { kind: 'statefulset', instanceIndexEnv: false },
    ],
    [
      { OPI_WORKLOAD_KIND: 'statefulset', OPI_INSTANCE_INDEX_ENV: 'false' },
      { kind: 'statefulset', instanceIndexEnv: false },
    ],
    [{ OPI_INSTANCE_INDEX_ENV: 'on' }, { kind: 'deployment', instanceIndexEnv: true }],
  ])('read %j', (env, expected) => {
    expect(parseSettings(env).workloads).toEqual(expected);
  });

  it.each([
    [{ OPI_WORKLOAD_KIND: 'StatefulSet' }, 'OPI_WORKLOAD_KIND'],
    [{ OPI_WORKLOAD_KIND: 'daemonset' }, 'OPI_WORKLOAD_KIND'],
    [{ OPI_INSTANCE_INDEX_ENV: 'maybe' }, 'OPI_INSTANCE_INDEX_ENV'],
  ])('refuse %j, naming the variable', (env, name) => {
    expect(() => parseSettings(env)).toThrow(SettingsError);
    expect(() => parseSettings(env)).toThrow(name);
  });
});
