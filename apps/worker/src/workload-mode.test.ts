import { describe, expect, it } from '@jest/globals';
import type { ServerVersion } from '@opi/kube';
import { StartRefusedError, checkWorkloadMode, indexEnvProblem, versionOf } from './workload-mode.js';

const v = (major: string, minor: string, gitVersion = `v${major}.${minor}.0`): ServerVersion => ({
  major,
  minor,
  gitVersion,
});

describe('versionOf', () => {
  it.each<[ServerVersion, { major: number; minor: number } | undefined]>([
    [v('1', '28'), { major: 1, minor: 28 }],
    [v('1', '28+', 'v1.28.3-gke.1286000'), { major: 1, minor: 28 }],
    [v('', '', 'v1.30.2-eks-1552ad0'), { major: 1, minor: 30 }],
    [v('', '', 'unknown'), undefined],
  ])('reads %j', (version, expected) => {
    expect(versionOf(version)).toEqual(expected);
  });
});

describe('indexEnvProblem', () => {
  it.each([v('1', '28'), v('1', '35'), v('2', '0'), v('1', '29+')])('accepts %j', (version) => {
    expect(indexEnvProblem(version)).toBeUndefined();
  });

  it.each([v('1', '20', 'v1.20.15'), v('1', '27'), v('', '', 'weird')])(
    'refuses %j, saying why and what to do',
    (version) => {
      const message = indexEnvProblem(version);
      expect(message).toContain('apps.kubernetes.io/pod-index');
      expect(message).toContain('1.28');
      expect(message).toContain('OPI_INSTANCE_INDEX_ENV=off');
    },
  );
});

describe('checkWorkloadMode', () => {
  const old = { getServerVersion: () => Promise.resolve(v('1', '20', 'v1.20.15')) };

  it('refuses the StatefulSet mode with index variables on an old cluster', async () => {
    await expect(checkWorkloadMode({ kind: 'statefulset', instanceIndexEnv: true }, old)).rejects.toThrow(
      StartRefusedError,
    );
    await expect(checkWorkloadMode({ kind: 'statefulset', instanceIndexEnv: true }, old)).rejects.toThrow(
      /this cluster runs Kubernetes 1\.20/,
    );
  });

  it('starts without the version when the mode needs no label, assuming a current cluster', async () => {
    const down = {
      getServerVersion: (): Promise<ServerVersion> => Promise.reject(new Error('connection refused')),
    };
    await expect(checkWorkloadMode({ kind: 'deployment', instanceIndexEnv: true }, down)).resolves.toEqual({
      version: 'unknown (connection refused)',
      pdbs: true,
    });
    await expect(
      checkWorkloadMode({ kind: 'statefulset', instanceIndexEnv: false }, down),
    ).resolves.toMatchObject({
      pdbs: true,
    });
    await expect(checkWorkloadMode({ kind: 'statefulset', instanceIndexEnv: true }, down)).rejects.toThrow(
      'connection refused',
    );
  });

  it('runs without PodDisruptionBudgets on a cluster before policy/v1 (1.21)', async () => {
    await expect(checkWorkloadMode({ kind: 'deployment', instanceIndexEnv: true }, old)).resolves.toEqual({
      version: 'v1.20.15',
      pdbs: false,
    });
    await expect(checkWorkloadMode({ kind: 'statefulset', instanceIndexEnv: false }, old)).resolves.toEqual({
      version: 'v1.20.15',
      pdbs: false,
    });
  });

  it('starts on a 1.28 cluster', async () => {
    const current = { getServerVersion: () => Promise.resolve(v('1', '28')) };
    await expect(
      checkWorkloadMode({ kind: 'statefulset', instanceIndexEnv: true }, current),
    ).resolves.toEqual({ version: 'v1.28.0', pdbs: true });
  });
});
