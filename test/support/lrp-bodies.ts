/** An LRP's identities as CC makes them, and the bodies of CC's desire (PUT) and update (POST) for it. */
import { randomUUID } from 'node:crypto';

export interface Lrp {
  guid: string;
  version: string;
  processGuid: string;
}

export function newLrp(): Lrp {
  const guid = randomUUID();
  const version = randomUUID();
  return { guid, version, processGuid: `${guid}-${version}` };
}

export function desireBody(lrp: Lrp, overrides: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    guid: lrp.guid,
    version: lrp.version,
    process_guid: lrp.processGuid,
    process_type: 'web',
    app_guid: randomUUID(),
    app_name: 'my-app',
    space_guid: randomUUID(),
    space_name: 'dev',
    organization_guid: randomUUID(),
    organization_name: 'acme',
    ports: [8080],
    environment: { VCAP_APPLICATION: '{"limits":{"mem":256}}' },
    instances: 2,
    last_updated: '1589212345.123456',
    health_check_type: 'port',
    health_check_http_endpoint: '',
    health_check_timeout_ms: 60000,
    start_timeout_ms: 60000,
    memory_mb: 256,
    disk_mb: 1024,
    cpu_weight: 10,
    volume_mounts: [],
    lifecycle: { docker_lifecycle: { image: 'registry.example.com/team/app:1', command: [] } },
    user_defined_annotations: {},
    placement_tags: [],
    routes: { cf_router: [] },
    egress_rules: [],
    ...overrides,
  };
}

export function updateBody(lrp: Lrp, update: Record<string, unknown>): Record<string, unknown> {
  return { guid: lrp.guid, version: lrp.version, update };
}
