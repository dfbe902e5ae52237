/**
 * CC's request bodies as zod schemas (../shared/opi-contract.md). Unknown fields are ignored (CC sends
 * more than we use); every field we use is checked so that bad input is refused at the edge with a
 * message naming the field, rather than failing later in a worker against the Kubernetes API.
 */
import { z } from 'zod';
import { DNS_LABEL, DNS_SUBDOMAIN, ENV_NAME, LABEL_VALUE, QUALIFIED_NAME } from './names.js';

const labelValue = (what: string) =>
  z
    .string()
    .regex(
      LABEL_VALUE,
      `${what} must be 1-63 letters, digits, '-', '_' or '.', starting and ending with a letter or digit`,
    );

const nonNegativeInt = z.int().min(0);

const dockerLifecycle = z.object({
  image: z.string().trim().min(1, 'image must not be empty').max(1024),
  command: z
    .array(z.string().max(128 * 1024))
    .max(64)
    .optional()
    .default([]),
  registry_username: z.string().max(1024).optional(),
  registry_password: z
    .string()
    .max(16 * 1024)
    .optional(),
});

const buildpackLifecycle = z.object({
  droplet_hash: z.string().regex(/^[a-f0-9]{1,128}$/i, 'droplet_hash must be hexadecimal'),
  droplet_guid: labelValue('droplet_guid'),
  start_command: z
    .string()
    .max(128 * 1024)
    .optional()
    .default(''),
});

export const lifecycleSchema = z
  .object({
    docker_lifecycle: dockerLifecycle.optional(),
    buildpack_lifecycle: buildpackLifecycle.optional(),
  })
  .refine((l) => (l.docker_lifecycle ? 1 : 0) + (l.buildpack_lifecycle ? 1 : 0) === 1, {
    error: 'lifecycle must have exactly one of docker_lifecycle or buildpack_lifecycle',
  });

const stringMap = (keyPattern: RegExp, keyWhat: string, maxEntries: number) =>
  z
    .record(z.string(), z.string().max(1024 * 1024))
    .refine((m) => Object.keys(m).length <= maxEntries, `at most ${maxEntries} entries`)
    .superRefine((m, ctx) => {
      for (const k of Object.keys(m)) {
        if (!keyPattern.test(k))
          ctx.addIssue({
            code: 'custom',
            message: `${JSON.stringify(k.slice(0, 80))} is not a valid ${keyWhat}`,
            path: [k],
          });
      }
    });

/** User annotations go on the pods, whose annotations the API server limits to 256 KiB in all. */
export const USER_ANNOTATIONS_MAX_BYTES = 128 * 1024;

export const desireLrpSchema = z
  .object({
    guid: labelValue('guid'),
    version: labelValue('version'),
    process_guid: z.string().min(3).max(127),
    process_type: z.string().max(63).optional().default('web'),
    app_guid: z.string().max(63).optional().default(''),
    app_name: z.string().max(255).optional().default(''),
    space_guid: z.string().max(63).optional().default(''),
    space_name: z.string().max(255).optional().default(''),
    organization_guid: z.string().max(63).optional().default(''),
    organization_name: z.string().max(255).optional().default(''),
    namespace: z
      .union([z.literal(''), z.string().regex(DNS_LABEL, 'namespace must be a DNS-1123 label')])
      .optional()
      .default(''),
    ports: z.array(z.int().min(1).max(65535)).max(16).optional().default([]),
    environment: stringMap(ENV_NAME, 'environment variable name', 1000).optional().default({}),
    instances: nonNegativeInt.max(10_000),
    last_updated: z.string().max(64).optional().default(''),
    health_check_type: z.enum(['port', 'http', 'process', 'none']).optional().default('port'),
    health_check_http_endpoint: z.string().max(2048).optional().default(''),
    health_check_timeout_ms: nonNegativeInt.optional().default(0),
    start_timeout_ms: nonNegativeInt.optional().default(0),
    memory_mb: z
      .int()
      .min(1, 'memory_mb must be at least 1')
      .max(1024 * 1024),
    disk_mb: z
      .int()
      .min(1, 'disk_mb must be at least 1')
      .max(1024 * 1024 * 1024),
    cpu_weight: z.int().min(1).max(100).optional().default(1),
    volume_mounts: z
      .array(
        z.object({
          volume_id: z.string().regex(DNS_SUBDOMAIN, 'volume_id must be a PersistentVolumeClaim name'),
          mount_dir: z
            .string()
            .regex(/^\/[^\0]*$/, 'mount_dir must be an absolute path')
            .max(4096),
        }),
      )
      .max(32)
      .optional()
      .default([]),
    lifecycle: lifecycleSchema,
    user_defined_annotations: stringMap(QUALIFIED_NAME, 'annotation name', 100).optional().default({}),
  })
  .superRefine((d, ctx) => {
    // The pods carry them, and the API server allows 256 KiB of annotations per object (CC's are a few
    // prometheus.io/* entries, each value at most 5,000 characters).
    const bytes = Object.entries(d.user_defined_annotations).reduce(
      (n, [k, v]) => n + Buffer.byteLength(k) + Buffer.byteLength(v),
      0,
    );
    if (bytes > USER_ANNOTATIONS_MAX_BYTES) {
      ctx.addIssue({
        code: 'custom',
        path: ['user_defined_annotations'],
        message: `at most ${USER_ANNOTATIONS_MAX_BYTES} bytes in all, not ${bytes}`,
      });
    }
    // Kubernetes refuses a pod with two mounts at one path; the worker could never create it.
    const dirs = new Set<string>();
    d.volume_mounts.forEach((m, i) => {
      if (dirs.has(m.mount_dir)) {
        ctx.addIssue({
          code: 'custom',
          path: ['volume_mounts', i, 'mount_dir'],
          message: `${JSON.stringify(m.mount_dir.slice(0, 80))} is mounted twice`,
        });
      }
      dirs.add(m.mount_dir);
    });
    if (d.process_guid !== `${d.guid}-${d.version}`) {
      ctx.addIssue({
        code: 'custom',
        path: ['process_guid'],
        message: 'process_guid must be "<guid>-<version>"',
      });
    }
    if (d.health_check_type === 'http' && !d.health_check_http_endpoint) {
      ctx.addIssue({
        code: 'custom',
        path: ['health_check_http_endpoint'],
        message: 'required when health_check_type is http',
      });
    }
    if ((d.health_check_type === 'http' || d.health_check_type === 'port') && d.ports.length === 0) {
      ctx.addIssue({
        code: 'custom',
        path: ['ports'],
        message: `a ${d.health_check_type} health check needs a port`,
      });
    }
  });

export type DesireLrpRequest = z.infer<typeof desireLrpSchema>;

export const updateLrpSchema = z.object({
  guid: labelValue('guid'),
  version: labelValue('version'),
  update: z.object({
    instances: nonNegativeInt.max(10_000),
    annotation: z.string().max(64),
    // Trimmed like the desire's image, so a blank one means "leave as is" rather than a broken reference.
    image: z.string().trim().max(1024).optional(),
    routes: z.unknown().optional(),
  }),
});

export type UpdateLrpRequest = z.infer<typeof updateLrpSchema>;

/** The path parameters of the three-segment routes. */
export const guidParam = labelValue('guid');
export const versionParam = labelValue('version');
export const indexParam = z.string().regex(/^\d{1,5}$/, 'index must be a non-negative integer');

/** Flattens zod issues into one message that names each field. */
export function describeIssues(error: z.ZodError): string {
  return error.issues
    .slice(0, 10)
    .map((i) => `${i.path.length ? i.path.map(String).join('.') : 'body'}: ${i.message}`)
    .join('; ');
}
