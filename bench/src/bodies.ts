/** The LRPs the benchmark desires: CC-like bodies with deterministic guids, and the LRPs they translate to. */
import { desireLrpSchema, toDesiredLrp } from '@opi/contract';
import type { DesiredLrp } from '@opi/domain';

/** The version of every LRP the bench desires. */
export const VERSION = 'v1';

export function uuid(n: number, salt: string): string {
  return `${salt.padEnd(8, '0').slice(0, 8)}-0000-4000-8000-${n.toString(16).padStart(12, '0')}`;
}

/** A CC-like desire body, as the integration tests send. */
export function desireBody(guid: string, version: string): Record<string, unknown> {
  return {
    guid,
    version,
    process_guid: `${guid}-${version}`,
    process_type: 'web',
    app_guid: guid,
    app_name: `app-${guid.slice(-8)}`,
    space_guid: 'space-1',
    space_name: 'dev',
    organization_guid: 'org-1',
    organization_name: 'org',
    ports: [8080],
    environment: { GREETING: 'hello' },
    instances: 1,
    last_updated: '1589212345.000001',
    health_check_type: 'port',
    health_check_timeout_ms: 60000,
    memory_mb: 64,
    disk_mb: 256,
    cpu_weight: 1,
    lifecycle: { docker_lifecycle: { image: 'registry.example/app:1', command: [] } },
  };
}

/** The LRP of `guid` as the API reads its desire body, in `namespace`, running `instances`. */
export function desiredLrp(guid: string, namespace: string, instances = 1): DesiredLrp {
  return toDesiredLrp(desireLrpSchema.parse({ ...desireBody(guid, VERSION), instances }), {
    namespace,
    dropletRegistry: 'registry.example',
  });
}
