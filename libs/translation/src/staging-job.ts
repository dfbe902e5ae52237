/**
 * The Job (batch/v1) that stages an app with buildpacks.
 *
 * The recipe contract. The Job runs the operator's recipe image (`settings.recipeImage`), which reads its
 * work from the environment set below: it downloads the app bits from `APP_BITS_DOWNLOAD_URI`, runs the
 * `BUILDPACKS` (a JSON array of `{name, key, url, skip_detect}`, in CC's order), restores and saves the
 * buildpack cache through `BUILDPACK_CACHE_*` when given, and uploads the droplet to `DROPLET_UPLOAD_URI`.
 * `STAGING_GUID` and `COMPLETION_CALLBACK` are for its logs: the service, not the recipe, calls CC back.
 * - On success it exits 0 after writing its result, as one JSON object (at most 4 KiB, the kubelet's limit),
 *   to the termination message path `/dev/termination-log`:
 *   `{"lifecycle_type":"buildpack","lifecycle_metadata":{"buildpack_key":"…","detected_buildpack":"…"},
 *   "process_types":{"web":"…"},"execution_metadata":"…"}` (CC's `build_completed` result; see
 *   stagingOutcome).
 * - On failure it exits non-zero, with a message for the user in the same file (e.g. `no buildpack
 *   detected`). Without one, `FallbackToLogsOnError` makes the kubelet use the tail of its log instead;
 *   the last error line of either is what CC is told (see staging-failure.ts). Exit codes 222, 223 and
 *   224 say, as the buildpack app lifecycle's builder does, that no buildpack detected the app, that its
 *   compile failed, that its release failed; CC shows its own message for each.
 */
import type { DesiredStaging } from '@opi/domain';
import { containerResources, containerSecurityContext } from './container.js';
import { pairsEnv } from './env.js';
import type { Container, EnvVar, Job, JobSpec } from '@opi/kube-objects';
import { jobName, runOnceJob, runOnceKind } from './run-once-job.js';

export const SOURCE_TYPE_STAGING = 'STG';
export const LABEL_STAGING_GUID = 'cloudfoundry.org/staging_guid';
export const ANNOTATION_STAGING_GUID = 'cloudfoundry.org/staging_guid';

const STAGING = runOnceKind({
  sourceType: SOURCE_TYPE_STAGING,
  guidLabel: LABEL_STAGING_GUID,
  guidAnnotation: ANNOTATION_STAGING_GUID,
});

/** The recipe's container name, the same in every staging pod. */
export const STAGING_CONTAINER = 'opi-staging';

/** Where the recipe writes its result; the API server's default, spelled out because it is the contract. */
export const TERMINATION_MESSAGE_PATH = '/dev/termination-log';

/** Every staging Job (and staging pod) of this service, for list and watch. */
export const STAGING_SELECTOR = STAGING.selector;

/** `stage-<first 8 of the guid>-<10 hex of sha256(guid)>`, at most 25 characters (see jobName). */
export function stagingJobName(stagingGuid: string): string {
  return jobName('stage', stagingGuid);
}

/** One staging's Job and pods as a list selector. */
export function stagingSelectorString(stagingGuid: string): string {
  return STAGING.selectorOf(stagingGuid);
}

export function stagingLabels(staging: DesiredStaging): Record<string, string> {
  return STAGING.labels(staging.stagingGuid, staging);
}

/** The staging's annotations (see RunOnceKind). */
export function stagingAnnotations(staging: DesiredStaging): Record<string, string> {
  return STAGING.annotations(staging.stagingGuid, staging);
}

export interface StagingJobSettings {
  /** The buildpack staging recipe (see the contract above). */
  recipeImage: string;
  /** Refuse images that run as root, as for apps. */
  runAsNonRoot: boolean;
}

type BuildpackLifecycle = Extract<DesiredStaging['lifecycle'], { type: 'buildpack' }>;

/** The recipe's inputs; the optional cache variables only when CC sent them (a first staging has no cache). */
function recipeEnv(staging: DesiredStaging, lifecycle: BuildpackLifecycle): EnvVar[] {
  const buildpacks = lifecycle.buildpacks.map((b) => ({
    name: b.name,
    key: b.key,
    url: b.url,
    skip_detect: b.skipDetect,
  }));
  const optional: [string, string | undefined][] = [
    ['BUILDPACK_CACHE_DOWNLOAD_URI', lifecycle.buildpackCacheDownloadUri],
    ['BUILDPACK_CACHE_UPLOAD_URI', lifecycle.buildpackCacheUploadUri],
    ['BUILDPACK_CACHE_CHECKSUM', lifecycle.buildpackCacheChecksum],
    ['BUILDPACK_CACHE_CHECKSUM_ALGORITHM', lifecycle.buildpackCacheChecksumAlgorithm],
  ];
  return [
    { name: 'STAGING_GUID', value: staging.stagingGuid },
    { name: 'COMPLETION_CALLBACK', value: staging.completionCallback },
    { name: 'APP_BITS_DOWNLOAD_URI', value: lifecycle.appBitsDownloadUri },
    { name: 'DROPLET_UPLOAD_URI', value: lifecycle.dropletUploadUri },
    { name: 'BUILDPACKS', value: JSON.stringify(buildpacks) },
    ...optional.flatMap(([name, value]) => (value ? [{ name, value }] : [])),
  ];
}

function recipeContainer(
  staging: DesiredStaging,
  lifecycle: BuildpackLifecycle,
  settings: StagingJobSettings,
): Container {
  return {
    name: STAGING_CONTAINER,
    image: settings.recipeImage,
    env: pairsEnv(staging.environment, recipeEnv(staging, lifecycle)),
    resources: containerResources(staging),
    securityContext: containerSecurityContext(settings.runAsNonRoot),
    terminationMessagePath: TERMINATION_MESSAGE_PATH,
    // A recipe that dies without writing a message still tells the user something: its last log lines.
    terminationMessagePolicy: 'FallbackToLogsOnError',
  };
}

/**
 * The Job that stages `staging` with buildpacks, once (see runOnceJob). Docker staging needs no Job (its
 * result comes from the image's config), so a docker lifecycle is a caller's error and throws.
 */
export function stagingToJob(staging: DesiredStaging, settings: StagingJobSettings): Job & { spec: JobSpec } {
  const { lifecycle } = staging;
  if (lifecycle.type !== 'buildpack') {
    throw new Error(
      `stagingToJob stages buildpack apps; staging ${staging.stagingGuid} is ${lifecycle.type}`,
    );
  }
  return runOnceJob({
    name: stagingJobName(staging.stagingGuid),
    namespace: staging.namespace,
    labels: stagingLabels(staging),
    annotations: stagingAnnotations(staging),
    container: recipeContainer(staging, lifecycle, settings),
  });
}
