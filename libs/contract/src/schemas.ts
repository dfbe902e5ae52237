/**
 * CC's request bodies as zod schemas (docs/cloud-controller.md, "What CC sends, and what it reads back").
 * Unknown fields are ignored; every field we use is checked so that bad input is refused at the edge
 * with a message naming the field, rather than failing later in a worker against the Kubernetes API.
 * Every optional field also takes `null` (optional.ts): CC sends nil as null.
 */
import { z } from 'zod';
import { APP_ENV_NAME, DNS_LABEL, DNS_SUBDOMAIN, LABEL_VALUE, QUALIFIED_NAME } from '@opi/domain';
import { optional, text, withDefault } from './optional.js';

const labelValue = (what: string) =>
  z
    .string()
    .regex(
      LABEL_VALUE,
      `${what} must be 1-63 letters, digits, '-', '_' or '.', starting and ending with a letter or digit`,
    );

const nonNegativeInt = z.int().min(0);

/** The desire body's limits, shared with its zod-free reader (desire-fast.ts). */
export const DESIRE_LIMITS = {
  processGuid: 127,
  processType: 63,
  guidText: 63,
  nameText: 255,
  ports: 16,
  environment: 1000,
  annotations: 100,
  mapValue: 1024 * 1024,
  instances: 10_000,
  lastUpdated: 64,
  httpEndpoint: 2048,
  memoryMb: 1024 * 1024,
  diskMb: 1024 * 1024 * 1024,
  volumeMounts: 32,
  mountDir: 4096,
  egressRules: 10_000,
  egressProtocol: 16,
  egressItems: 1000,
  egressDestination: 256,
  egressAnnotation: 1024,
  placementTags: 100,
  placementTag: 255,
  image: 1024,
  commandArgs: 64,
  commandArg: 128 * 1024,
  registryUsername: 1024,
  registryPassword: 16 * 1024,
  startCommand: 128 * 1024,
  routes: 1000,
  hostname: 4096,
} as const;
const L = DESIRE_LIMITS;

export const dockerLifecycle = z.object({
  image: z.string().trim().min(1, 'image must not be empty').max(L.image),
  command: withDefault(z.array(z.string().max(L.commandArg)).max(L.commandArgs), () => []),
  registry_username: optional(z.string().max(L.registryUsername)),
  registry_password: optional(z.string().max(L.registryPassword)),
});

const buildpackLifecycle = z.object({
  droplet_hash: z.string().regex(/^[a-f0-9]{1,128}$/i, 'droplet_hash must be hexadecimal'),
  droplet_guid: labelValue('droplet_guid'),
  start_command: text(L.startCommand),
});

/** The namespace a request names; "" or absent: the server's default. */
export const namespaceField = withDefault(
  z.union([z.literal(''), z.string().regex(DNS_LABEL, 'namespace must be a DNS-1123 label')]),
  () => '',
);

export const lifecycleSchema = z
  .object({
    docker_lifecycle: optional(dockerLifecycle),
    buildpack_lifecycle: optional(buildpackLifecycle),
  })
  .refine((l) => (l.docker_lifecycle ? 1 : 0) + (l.buildpack_lifecycle ? 1 : 0) === 1, {
    error: 'lifecycle must have exactly one of docker_lifecycle or buildpack_lifecycle',
  });

const stringMap = (keyPattern: RegExp, keyWhat: string, maxEntries: number) =>
  z
    .record(z.string(), text(L.mapValue))
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

/** CC's HTTP routes of a process: `{"cf-router": [{hostname, port}]}` (hostname may carry a /path). */
export const routesSchema = z.object({
  'cf-router': withDefault(
    z
      .array(
        z.object({
          hostname: z.string().max(L.hostname),
          port: optional(z.int().min(0).max(65535)),
        }),
      )
      .max(L.routes),
    () => [],
  ),
});

/**
 * An application security group rule as CC sends it: Diego's SecurityGroupRule in protobuf JSON
 * (camelCase, default values left out). Kept with the LRP; not enforced on the cluster (yet).
 */
const egressRule = z.object({
  protocol: withDefault(z.string().max(L.egressProtocol), () => 'all'),
  destinations: withDefault(z.array(z.string().max(L.egressDestination)).max(L.egressItems), () => []),
  ports: optional(z.array(z.int().min(0).max(65535)).max(L.egressItems)),
  portRange: optional(z.object({ start: withDefault(z.int(), () => 0), end: withDefault(z.int(), () => 0) })),
  icmpInfo: optional(z.object({ type: withDefault(z.int(), () => 0), code: withDefault(z.int(), () => 0) })),
  log: withDefault(z.boolean(), () => false),
  annotations: optional(z.array(z.string().max(L.egressAnnotation)).max(L.egressItems)),
});

export const desireLrpSchema = z
  .object({
    guid: labelValue('guid'),
    version: labelValue('version'),
    process_guid: z.string().min(3).max(L.processGuid),
    process_type: withDefault(z.string().max(L.processType), () => 'web'),
    app_guid: text(L.guidText),
    app_name: text(L.nameText),
    space_guid: text(L.guidText),
    space_name: text(L.nameText),
    organization_guid: text(L.guidText),
    organization_name: text(L.nameText),
    namespace: namespaceField,
    ports: withDefault(z.array(z.int().min(1).max(65535)).max(L.ports), () => []),
    environment: withDefault(stringMap(APP_ENV_NAME, 'environment variable name', L.environment), () => ({})),
    instances: nonNegativeInt.max(L.instances),
    last_updated: text(L.lastUpdated),
    health_check_type: withDefault(z.enum(['port', 'http', 'process', 'none']), () => 'port' as const),
    health_check_http_endpoint: text(L.httpEndpoint),
    // 0 is CC's "the process has no timeout of its own": start_timeout_ms then carries CC's default.
    health_check_timeout_ms: withDefault(nonNegativeInt, () => 0),
    start_timeout_ms: withDefault(nonNegativeInt, () => 0),
    memory_mb: z.int().min(1, 'memory_mb must be at least 1').max(L.memoryMb),
    disk_mb: z.int().min(1, 'disk_mb must be at least 1').max(L.diskMb),
    cpu_weight: withDefault(z.int().min(1).max(100), () => 1),
    volume_mounts: withDefault(
      z
        .array(
          z.object({
            volume_id: z.string().regex(DNS_SUBDOMAIN, 'volume_id must be a PersistentVolumeClaim name'),
            mount_dir: z
              .string()
              .regex(/^\/[^\0]*$/, 'mount_dir must be an absolute path')
              .max(L.mountDir),
          }),
        )
        .max(L.volumeMounts),
      () => [],
    ),
    lifecycle: lifecycleSchema,
    user_defined_annotations: withDefault(
      stringMap(QUALIFIED_NAME, 'annotation name', L.annotations),
      () => ({}),
    ),
    routes: optional(routesSchema),
    egress_rules: withDefault(z.array(egressRule).max(L.egressRules), () => []),
    // Isolation segment names; kept, not acted on (no node selection by segment yet).
    placement_tags: withDefault(z.array(z.string().max(L.placementTag)).max(L.placementTags), () => []),
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
    if ((d.health_check_type === 'http' || d.health_check_type === 'port') && d.ports.length === 0) {
      ctx.addIssue({
        code: 'custom',
        path: ['ports'],
        message: `a ${d.health_check_type} health check needs a port`,
      });
    }
  });

export type DesireLrpRequest = z.infer<typeof desireLrpSchema>;
export type RoutesRequest = z.infer<typeof routesSchema>;

export const updateLrpSchema = z.object({
  guid: labelValue('guid'),
  version: labelValue('version'),
  update: z.object({
    instances: nonNegativeInt.max(10_000),
    annotation: z.string().max(64),
    // Trimmed like the desire's image, so a blank one means "leave as is" rather than a broken reference.
    image: optional(z.string().trim().max(1024)),
    routes: optional(routesSchema),
  }),
});

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
