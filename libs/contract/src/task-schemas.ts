/**
 * CC's task and staging bodies (../shared/opi-contract.md, Tasks and Staging). The lifecycle pieces are
 * the apps' own, so a docker image or droplet is checked the same way wherever it comes from.
 */
import { z } from 'zod';
import { ENV_NAME } from './names.js';
import { lifecycleSchema } from './schemas.js';

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

/** CC sends task and staging environments as arrays of {name, value}. */
const envArray = z
  .array(
    z.object({
      name: z.string().regex(ENV_NAME, 'is not a valid environment variable name'),
      value: z.string().max(1024 * 1024),
    }),
  )
  .max(1000)
  .optional()
  .default([]);

const names = {
  app_guid: z.string().max(63).optional().default(''),
  app_name: z.string().max(255).optional().default(''),
  org_guid: z.string().max(63).optional().default(''),
  org_name: z.string().max(255).optional().default(''),
  space_guid: z.string().max(63).optional().default(''),
  space_name: z.string().max(255).optional().default(''),
};

const resources = {
  memory_mb: z
    .int()
    .min(1)
    .max(1024 * 1024)
    .optional()
    .default(1024),
  disk_mb: z
    .int()
    .min(1, 'disk_mb must be at least 1')
    .max(1024 * 1024 * 1024)
    .optional()
    .default(1024),
  cpu_weight: z.int().min(1).max(100).optional().default(1),
};

export const taskRequestSchema = z.object({
  name: z.string().max(255).optional().default(''),
  ...names,
  namespace: z
    .union([
      z.literal(''),
      z.string().regex(/^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/, 'namespace must be a DNS-1123 label'),
    ])
    .optional()
    .default(''),
  completion_callback: callbackUrl,
  environment: envArray,
  lifecycle: lifecycleSchema,
  ...resources,
});

export type TaskRequest = z.infer<typeof taskRequestSchema>;

const stagingDocker = z.object({
  image: z.string().trim().min(1, 'image must not be empty').max(1024),
  registry_username: z.string().max(1024).optional(),
  registry_password: z
    .string()
    .max(16 * 1024)
    .optional(),
});

const stagingBuildpack = z.object({
  app_bits_download_uri: z.url(),
  droplet_upload_uri: z.url(),
  buildpacks: z
    .array(
      z.object({
        name: z.string().max(255),
        key: z.string().max(255),
        url: z.string().max(4096),
        skip_detect: z.boolean().optional().default(false),
      }),
    )
    .max(64)
    .optional()
    .default([]),
  buildpack_cache_download_uri: z.string().max(4096).optional(),
  buildpack_cache_upload_uri: z.string().max(4096).optional(),
  buildpack_cache_checksum: z.string().max(256).optional(),
  buildpack_cache_checksum_algorithm: z.string().max(32).optional(),
});

export const stagingRequestSchema = z.object({
  staging_guid: z.string().max(63).optional(),
  ...names,
  completion_callback: callbackUrl,
  environment: envArray,
  lifecycle: z
    .object({ docker_lifecycle: stagingDocker.optional(), buildpack_lifecycle: stagingBuildpack.optional() })
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
    /^[A-Za-z0-9]([A-Za-z0-9_.-]{0,61}[A-Za-z0-9])?$/,
    'must be 1-63 letters, digits, "-", "_" or ".", starting and ending with a letter or digit',
  );
