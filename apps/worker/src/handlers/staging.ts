/**
 * Staging. Docker: the image's config is read from its registry (nothing runs in the cluster) and the
 * result reported at once. Buildpack: a staging Job runs the recipe image; the sync notices its end,
 * reads the result from the termination message and reports it.
 */
import { type StagingOutcome } from '@opi/domain';
import { stagingCompletedBody } from '@opi/callbacks';
import { RegistryError, executionMetadata, fetchImageConfig } from '@opi/registry';
import { stagingJobName, stagingToJob } from '@opi/translation';
import type { HandlerDeps } from '../deps.js';
import {
  type Delivered,
  type JobCreated,
  type NoRecord,
  type Refused,
  type Skipped,
  type Staged,
  type StagingFailed,
} from './outcome.js';
import { postToCc, reportCompletion } from './report.js';
import { createJobOnce } from './tasks.js';

export async function stage(
  deps: HandlerDeps,
  stagingGuid: string,
): Promise<NoRecord | Skipped | JobCreated | Staged | StagingFailed> {
  const rec = await deps.tasks.getStaging(stagingGuid);
  if (!rec) return { kind: 'no-record' };
  if (rec.outcome || rec.reported) return { kind: 'skipped', why: 'already staged' };
  const { staging } = rec;
  if (staging.lifecycle.type === 'buildpack') {
    const job = stagingToJob(staging, {
      recipeImage: deps.staging.recipeImage,
      runAsNonRoot: deps.runAsNonRoot,
    });
    await createJobOnce(deps.kube, staging.namespace, job);
    return { kind: 'job-created', namespace: staging.namespace, name: job.metadata.name };
  }
  const { image, registry } = staging.lifecycle;
  let outcome: StagingOutcome;
  try {
    const config = await fetchImageConfig(
      image,
      registry ? { username: registry.username, password: registry.password } : undefined,
      {
        insecureRegistries: deps.staging.insecureRegistries,
      },
    );
    outcome = {
      failed: false,
      result: {
        lifecycle_type: 'docker',
        lifecycle_metadata: { docker_image: image },
        process_types: { web: '' },
        execution_metadata: executionMetadata(config),
      },
    };
  } catch (err) {
    // The registry's answer is the user's to act on (wrong name, credentials, registry down): a StagingError.
    if (!(err instanceof RegistryError)) throw err;
    outcome = { failed: true, message: err.message };
  }
  await deps.tasks.setStagingOutcome(stagingGuid, outcome);
  await deps.producer.reportStaging(stagingGuid);
  return outcome.failed ? { kind: 'staging-failed', message: outcome.message } : { kind: 'staged' };
}

export async function reportStaging(
  deps: HandlerDeps,
  stagingGuid: string,
): Promise<NoRecord | Skipped | Delivered | Refused> {
  const rec = await deps.tasks.getStaging(stagingGuid);
  if (!rec) return { kind: 'no-record' };
  const { staging } = rec;
  // Docker staging ran nothing in the cluster: its record is the only place to remember the report.
  const job =
    staging.lifecycle.type === 'buildpack'
      ? { namespace: staging.namespace, name: stagingJobName(stagingGuid) }
      : undefined;
  return reportCompletion(deps, {
    kind: 'staging',
    job,
    record: rec,
    post: (outcome) =>
      postToCc(deps, staging.completionCallback, stagingCompletedBody(outcome), { stagingGuid }),
    markRecord: () => deps.tasks.markStagingReported(stagingGuid),
    logged: (outcome, result) => {
      deps.logger.info({ stagingGuid, failed: outcome.failed, result }, 'staging completion reported');
    },
  });
}
