/**
 * CC's task and staging bodies (docs/api.md, "Tasks and staging"). The lifecycle pieces are
 * the apps' own, so a docker image or droplet is checked the same way wherever it comes from.
 */
import { z } from 'zod';
import { ENV_NAME, LABEL_VALUE } from '@opi/domain';
import { dockerLifecycle, lifecycleSchema, namespaceField } from './schemas.js';
import { optional, text, withDefault } from './optional.js';

/** A callback CC gave us: an absolute http(s) URL. */
export const callbackUrl = z
  .string()
  .max(4096)
  .refine((u) => {
    try {
      const url = new URL(u);
      return url.protocol === 'http:' || url.protocol === 'https:';
    } catch {
      return false;
    }
  }, 'completion_callback must be an absolute http or https URL');

/**
 * CC sends task and staging environments as arrays of Diego's EnvironmentVariable in protobuf JSON,
 * which leaves out a value that is "": `{"name": "X"}` is X set to "".
 */
const envArray = withDefault(
  z
    .array(
      z.object({
        name: z.string().regex(ENV_NAME, 'is not a valid environment variable name'),
        value: text(1024 * 1024),
      }),
    )
    .max(1000),
  () => [],
);

const names = {
  app_guid: text(63),
  app_name: text(255),
  org_guid: text(63),
  org_name: text(255),
  space_guid: text(63),
  space_name: text(255),
};

/** CC's task client sends none of these (1 GiB each then); its stager client sends all three. */
const resources = {
  memory_mb: withDefault(
    z
      .int()
      .min(1)
      .max(1024 * 1024),
    () => 1024,
  ),
  disk_mb: withDefault(
    z
      .int()
      .min(1, 'disk_mb must be at least 1')
      .max(1024 * 1024 * 1024),
    () => 1024,
  ),
  cpu_weight: withDefault(z.int().min(1).max(100), () => 1),
};

export const taskRequestSchema = z.object({
  name: text(255),
  ...names,
  namespace: namespaceField,
  completion_callback: callbackUrl,
  environment: envArray,
  lifecycle: lifecycleSchema,
  ...resources,
});

export type TaskRequest = z.infer<typeof taskRequestSchema>;

/** Staging has no command: the image's own is what it reports. */
const stagingDocker = dockerLifecycle.omit({ command: true });

const stagingBuildpack = z.object({
  app_bits_download_uri: z.url(),
  droplet_upload_uri: z.url(),
  // Admin buildpacks carry a sha256 (null for one uploaded before CC kept checksums); custom ones do not.
  buildpacks: withDefault(
    z
      .array(
        z.object({
          name: z.string().max(255),
          key: z.string().max(4096),
          url: z.string().max(4096),
          sha256: optional(z.string().max(128)),
          skip_detect: withDefault(z.boolean(), () => false),
        }),
      )
      .max(64),
    () => [],
  ),
  // null on an app's first staging: there is no cache yet.
  buildpack_cache_download_uri: optional(z.string().max(4096)),
  buildpack_cache_upload_uri: optional(z.string().max(4096)),
  buildpack_cache_checksum: optional(z.string().max(256)),
  buildpack_cache_checksum_algorithm: optional(z.string().max(32)),
});

export const stagingRequestSchema = z.object({
  staging_guid: optional(z.string().max(63)),
  ...names,
  completion_callback: callbackUrl,
  environment: envArray,
  lifecycle: z
    .object({ docker_lifecycle: optional(stagingDocker), buildpack_lifecycle: optional(stagingBuildpack) })
    .refine((l) => (l.docker_lifecycle ? 1 : 0) + (l.buildpack_lifecycle ? 1 : 0) === 1, {
      error: 'lifecycle must have exactly one of docker_lifecycle or buildpack_lifecycle',
    }),
  ...resources,
});

export type StagingRequest = z.infer<typeof stagingRequestSchema>;

/** A task or staging guid in a path: it becomes a label value and part of object names. */
export const taskGuidParam = z
  .string()
  .regex(
    LABEL_VALUE,
    'must be 1-63 letters, digits, "-", "_" or ".", starting and ending with a letter or digit',
  );
