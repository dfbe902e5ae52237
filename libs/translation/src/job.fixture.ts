/** A complete DesiredTask and DesiredStaging for tests: every field set to a value that shows up where it lands. */
import type { DesiredStaging, DesiredTask } from '@opi/domain';

export const TASK_GUID = '7e5d1c3a-9b2f-4c8e-a1d0-3f6b2e9c8d71';
export const STAGING_GUID = 'b4c2e8f1-6a3d-4e9b-8c7f-1d2e3f4a5b6c';

export function sampleTask(overrides: Partial<DesiredTask> = {}): DesiredTask {
  return {
    taskGuid: TASK_GUID,
    name: 'migrate',
    appGuid: 'a1b2c3d4-0000-4000-8000-000000000001',
    appName: 'My App',
    orgGuid: 'a1b2c3d4-0000-4000-8000-000000000003',
    orgName: 'acme',
    spaceGuid: 'a1b2c3d4-0000-4000-8000-000000000002',
    spaceName: 'dev',
    namespace: 'cf-workloads',
    completionCallback: 'http://cc.internal/internal/v3/tasks/7e5d1c3a/completed',
    spec: {
      image: 'registry.example.com/team/app:1.2',
      command: ['/bin/sh', '-c', 'rake db:migrate'],
      environment: [
        { name: 'ZED', value: 'first' },
        { name: 'ALPHA', value: 'second' },
      ],
      memoryMb: 512,
      diskMb: 2048,
      cpuWeight: 10,
      registry: { server: 'registry.example.com', username: 'robot', password: 's3cr:et' },
    },
    ...overrides,
  };
}

export function sampleStaging(overrides: Partial<DesiredStaging> = {}): DesiredStaging {
  return {
    stagingGuid: STAGING_GUID,
    appGuid: 'a1b2c3d4-0000-4000-8000-000000000001',
    appName: 'My App',
    orgGuid: 'a1b2c3d4-0000-4000-8000-000000000003',
    orgName: 'acme',
    spaceGuid: 'a1b2c3d4-0000-4000-8000-000000000002',
    spaceName: 'dev',
    namespace: 'cf-workloads',
    completionCallback: `http://cc.internal/internal/v3/staging/${STAGING_GUID}/build_completed?start=true`,
    environment: [
      { name: 'VCAP_APPLICATION', value: '{"name":"my-app"}' },
      { name: 'BP_DEBUG', value: '1' },
    ],
    memoryMb: 1024,
    diskMb: 4096,
    cpuWeight: 50,
    lifecycle: {
      type: 'buildpack',
      appBitsDownloadUri: 'http://cc.internal/bits/app.zip',
      dropletUploadUri: 'http://cc.internal/droplets/upload',
      buildpacks: [
        { name: 'ruby_buildpack', key: 'ruby-key', url: 'http://cc.internal/bp/ruby.zip', skipDetect: false },
        { name: 'custom', key: 'custom-key', url: 'https://example.com/bp.zip', skipDetect: true },
      ],
      buildpackCacheDownloadUri: 'http://cc.internal/cache/download',
      buildpackCacheUploadUri: 'http://cc.internal/cache/upload',
      buildpackCacheChecksum: 'abc123',
      buildpackCacheChecksumAlgorithm: 'sha256',
    },
    ...overrides,
  };
}
