/**
 * CC's desire bodies (`PUT /apps/:process_guid`): the one the service's suites and the bench send, the one
 * with every field CC's client fills that the route tests send, and for the schema tests the complete
 * and minimal ones. `overrides` replaces fields or adds some (CC sends `null` for a few it leaves unset).
 */
import { randomUUID } from 'node:crypto';
import type { Lrp } from './guids.js';

type Body = Record<string, unknown>;

/**
 * A CC-like desire of the app `guid` at `version`: the same body for the same arguments, one instance of
 * a docker image with a port health check.
 */
export function desireBody(guid: string, version: string, overrides: Body = {}): Body {
  return {
    guid,
    version,
    process_guid: `${guid}-${version}`,
    process_type: 'web',
    app_guid: guid,
    app_name: `app-${guid.slice(0, 8)}`,
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
    ...overrides,
  };
}

/**
 * The desire of `lrp` with every field CC's client fills, the empty ones too (no routes, no volumes), and
 * app, space and org guids new on each call.
 */
export function clientDesireBody(lrp: Lrp, overrides: Body = {}): Body {
  return desireBody(lrp.guid, lrp.version, {
    process_guid: lrp.processGuid,
    app_guid: randomUUID(),
    app_name: 'my-app',
    space_guid: randomUUID(),
    organization_guid: randomUUID(),
    organization_name: 'acme',
    environment: { VCAP_APPLICATION: '{"limits":{"mem":256}}' },
    instances: 2,
    last_updated: '1589212345.123456',
    health_check_http_endpoint: '',
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
  });
}

/** The schema tests' LRP. */
export const GUID = '0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0';
export const VERSION = '11111111-2222-3333-4444-555555555555';
export const PROCESS_GUID = `${GUID}-${VERSION}`;

/** Every field CC sends on a desire, including the ones the server ignores and a few it never heard of. */
export function fullDesireBody(): Body {
  return {
    guid: GUID,
    version: VERSION,
    process_guid: PROCESS_GUID,
    process_type: 'web',
    app_guid: 'aaaaaaaa-bbbb-cccc-dddd-eeeeeeeeeeee',
    app_name: 'my-app',
    space_guid: 'space-guid-1',
    space_name: 'dev',
    organization_guid: 'org-guid-1',
    organization_name: 'acme',
    namespace: 'cf-workloads',
    ports: [8080, 9090],
    environment: {
      VCAP_APPLICATION: '{"application_id":"x","limits":{"mem":256}}',
      VCAP_SERVICES: '{}',
      'my.dotted-var_1': 'v',
      _UNDERSCORE: '',
    },
    instances: 3,
    last_updated: '1589212345.123456',
    health_check_type: 'http',
    health_check_http_endpoint: '/healthz',
    health_check_timeout_ms: 60000,
    start_timeout_ms: 60000,
    memory_mb: 256,
    disk_mb: 1024,
    cpu_weight: 100,
    volume_mounts: [{ volume_id: 'my-claim.data', mount_dir: '/var/vcap/data/x' }],
    lifecycle: {
      docker_lifecycle: {
        image: 'registry.example.com/team/app:1.2',
        command: ['/bin/sh', '-c', 'bundle exec rackup'],
        registry_username: 'user',
        registry_password: 's3cret',
      },
    },
    user_defined_annotations: { 'prometheus.io/scrape': 'true', 'prometheus.io/port': '9090' },
    // Sent by CC, kept with the LRP, not acted on.
    placement_tags: ['isolation-segment-a'],
    routes: {
      'cf-router': [
        { hostname: 'app.example.com', port: 8080 },
        { hostname: 'app.example.com/api', port: 8080 },
      ],
      tcp_router: [],
    },
    // Diego's SecurityGroupRule in protobuf JSON, as apps_rest_client_spec.rb expects it.
    egress_rules: [
      { protocol: 'udp', destinations: ['1.2.3.4'], ports: [8080] },
      { protocol: 'tcp', destinations: ['5.6.7.8'], portRange: { start: 9090, end: 9095 }, log: true },
    ],
    // Not in the contract at all.
    log_guid: 'log-guid',
    metrics_guid: 'metrics-guid',
    some_future_field: { nested: [1, 2, 3] },
  };
}

/** The smallest body the schema accepts: everything optional left out. */
export function minimalDesireBody(): Body {
  return {
    guid: GUID,
    version: VERSION,
    process_guid: PROCESS_GUID,
    instances: 1,
    memory_mb: 128,
    disk_mb: 256,
    health_check_type: 'process',
    lifecycle: { docker_lifecycle: { image: 'nginx' } },
  };
}

/** A copy of the full body with `field` set to `value` (undefined removes it). */
export function withField(field: string, value: unknown, base = fullDesireBody()): Body {
  const body = Object.fromEntries(Object.entries(base).filter(([k]) => k !== field));
  return value === undefined ? body : { ...body, [field]: value };
}
