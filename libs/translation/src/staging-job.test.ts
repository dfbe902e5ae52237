import { describe, expect, it } from '@jest/globals';
import { DNS_LABEL, type DesiredStaging } from '@opi/domain';
import { STAGING_GUID, sampleStaging } from './job.fixture.js';
import type { EnvVar } from '@opi/kube-objects';
import {
  STAGING_SELECTOR,
  stagingJobName,
  stagingLabels,
  stagingSelectorString,
  stagingToJob,
} from './staging-job.js';

const JOB_NAME = 'stage-b4c2e8f1-d6b6b3ca8b';
const RECIPE = 'registry.example.com/opi/recipe:1.0';
const CALLBACK = `http://cc.internal/internal/v3/staging/${STAGING_GUID}/build_completed?start=true`;
const labels = {
  'cloudfoundry.org/source_type': 'STG',
  'cloudfoundry.org/staging_guid': STAGING_GUID,
  'cloudfoundry.org/app_guid': 'a1b2c3d4-0000-4000-8000-000000000001',
  'cloudfoundry.org/space_guid': 'a1b2c3d4-0000-4000-8000-000000000002',
  'cloudfoundry.org/org_guid': 'a1b2c3d4-0000-4000-8000-000000000003',
  'app.kubernetes.io/managed-by': 'opi-server',
};
const BUILDPACKS =
  '[{"name":"ruby_buildpack","key":"ruby-key","url":"http://cc.internal/bp/ruby.zip","skip_detect":false},' +
  '{"name":"custom","key":"custom-key","url":"https://example.com/bp.zip","skip_detect":true}]';
const RECIPE_ENV: EnvVar[] = [
  { name: 'STAGING_GUID', value: STAGING_GUID },
  { name: 'COMPLETION_CALLBACK', value: CALLBACK },
  { name: 'APP_BITS_DOWNLOAD_URI', value: 'http://cc.internal/bits/app.zip' },
  { name: 'DROPLET_UPLOAD_URI', value: 'http://cc.internal/droplets/upload' },
  { name: 'BUILDPACKS', value: BUILDPACKS },
];
const CACHE_ENV: EnvVar[] = [
  { name: 'BUILDPACK_CACHE_DOWNLOAD_URI', value: 'http://cc.internal/cache/download' },
  { name: 'BUILDPACK_CACHE_UPLOAD_URI', value: 'http://cc.internal/cache/upload' },
  { name: 'BUILDPACK_CACHE_CHECKSUM', value: 'abc123' },
  { name: 'BUILDPACK_CACHE_CHECKSUM_ALGORITHM', value: 'sha256' },
];

type Buildpack = Extract<DesiredStaging['lifecycle'], { type: 'buildpack' }>;
const buildpackLifecycle = (overrides: Partial<Buildpack> = {}): Buildpack => ({
  ...(sampleStaging().lifecycle as Buildpack),
  ...overrides,
});
const build = (staging: DesiredStaging = sampleStaging(), runAsNonRoot = true) =>
  stagingToJob(staging, { recipeImage: RECIPE, runAsNonRoot });
const env = (staging: DesiredStaging) => build(staging).spec.template.spec!.containers[0]!.env;

describe('stagingJobName', () => {
  it.each<[string, string]>([
    [STAGING_GUID, JOB_NAME],
    ['abc', 'stage-abc-ba7816bf8f'],
    ['', 'stage-e3b0c44298'],
  ])('%j → %j', (guid, expected) => {
    expect(stagingJobName(guid)).toBe(expected);
  });

  it.each([STAGING_GUID, 'ABC_DEF.9', '', 'x'.repeat(300)])('is a short DNS-1123 label for %j', (guid) => {
    expect(stagingJobName(guid)).toMatch(DNS_LABEL);
    expect(stagingJobName(guid).length).toBeLessThanOrEqual(25);
  });
});

describe('stagingToJob', () => {
  it('builds the whole Job of a buildpack staging', () => {
    expect(build()).toEqual({
      apiVersion: 'batch/v1',
      kind: 'Job',
      metadata: {
        name: JOB_NAME,
        namespace: 'cf-workloads',
        labels,
        annotations: {
          'cloudfoundry.org/staging_guid': STAGING_GUID,
          'cloudfoundry.org/completion_callback': CALLBACK,
          'cloudfoundry.org/app_name': 'My App',
          'cloudfoundry.org/space_name': 'dev',
          'cloudfoundry.org/org_name': 'acme',
        },
      },
      spec: {
        parallelism: 1,
        completions: 1,
        backoffLimit: 0,
        template: {
          metadata: { labels },
          spec: {
            containers: [
              {
                name: 'opi-staging',
                image: RECIPE,
                env: [
                  { name: 'VCAP_APPLICATION', value: '{"name":"my-app"}' },
                  { name: 'BP_DEBUG', value: '1' },
                  ...RECIPE_ENV,
                  ...CACHE_ENV,
                ],
                resources: {
                  requests: { memory: '1024M', cpu: '50m', 'ephemeral-storage': '4096M' },
                  limits: { memory: '1024M', 'ephemeral-storage': '4096M' },
                },
                securityContext: { allowPrivilegeEscalation: false, runAsNonRoot: true },
                terminationMessagePath: '/dev/termination-log',
                terminationMessagePolicy: 'FallbackToLogsOnError',
              },
            ],
            restartPolicy: 'Never',
            automountServiceAccountToken: false,
            enableServiceLinks: false,
          },
        },
      },
    });
  });

  it.each<[string, Partial<Buildpack>, EnvVar[]]>([
    [
      'no cache yet (first staging): no cache variables',
      {
        buildpackCacheDownloadUri: undefined,
        buildpackCacheUploadUri: undefined,
        buildpackCacheChecksum: undefined,
        buildpackCacheChecksumAlgorithm: undefined,
      },
      RECIPE_ENV,
    ],
    [
      'an upload URI only, empty strings left out',
      {
        buildpackCacheDownloadUri: '',
        buildpackCacheChecksum: undefined,
        buildpackCacheChecksumAlgorithm: '',
      },
      [...RECIPE_ENV, { name: 'BUILDPACK_CACHE_UPLOAD_URI', value: 'http://cc.internal/cache/upload' }],
    ],
    [
      'no buildpacks (auto-detect by the recipe): an empty array',
      { buildpacks: [], buildpackCacheDownloadUri: undefined, buildpackCacheUploadUri: undefined },
      [
        ...RECIPE_ENV.map((e) => (e.name === 'BUILDPACKS' ? { name: 'BUILDPACKS', value: '[]' } : e)),
        ...CACHE_ENV.slice(2),
      ],
    ],
  ])('recipe env: %s', (_what, lifecycle, expected) => {
    expect(env(sampleStaging({ environment: [], lifecycle: buildpackLifecycle(lifecycle) }))).toEqual(
      expected,
    );
  });

  it('lets the recipe variables replace request variables of the same name', () => {
    const staging = sampleStaging({
      environment: [
        { name: 'DROPLET_UPLOAD_URI', value: 'http://evil.example.com' },
        { name: 'KEEP', value: 'x' },
      ],
    });
    expect(env(staging)).toEqual([{ name: 'KEEP', value: 'x' }, ...RECIPE_ENV, ...CACHE_ENV]);
  });

  it('throws for docker staging, which needs no Job', () => {
    const staging = sampleStaging({ lifecycle: { type: 'docker', image: 'busybox' } });
    expect(() => build(staging)).toThrow(/buildpack/);
  });

  it.each([true, false])('passes runAsNonRoot=%s to the container', (runAsNonRoot) => {
    expect(build(sampleStaging(), runAsNonRoot).spec.template.spec!.containers[0]!.securityContext).toEqual({
      allowPrivilegeEscalation: false,
      runAsNonRoot,
    });
  });

  it('leaves out labels whose values Kubernetes would refuse', () => {
    expect(stagingLabels(sampleStaging({ spaceGuid: 'x'.repeat(64), orgGuid: '' }))).toEqual({
      'cloudfoundry.org/source_type': 'STG',
      'cloudfoundry.org/staging_guid': STAGING_GUID,
      'cloudfoundry.org/app_guid': 'a1b2c3d4-0000-4000-8000-000000000001',
      'app.kubernetes.io/managed-by': 'opi-server',
    });
  });
});

describe('staging selectors', () => {
  it('select what stagingToJob labels', () => {
    expect(STAGING_SELECTOR).toBe('app.kubernetes.io/managed-by=opi-server,cloudfoundry.org/source_type=STG');
    expect(stagingSelectorString(STAGING_GUID)).toBe(
      `${STAGING_SELECTOR},cloudfoundry.org/staging_guid=${STAGING_GUID}`,
    );
  });
});
