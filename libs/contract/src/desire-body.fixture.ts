/** CC desire bodies for the schema tests (complete, minimal, one field changed) and readers of the issues. */
import { describeIssues } from './schemas.js';

export const GUID = '0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0';
export const VERSION = '11111111-2222-3333-4444-555555555555';
export const PROCESS_GUID = `${GUID}-${VERSION}`;

/** Every field CC sends on a desire, including the ones the server ignores and a few it never heard of. */
export function fullDesireBody(): Record<string, unknown> {
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
export function minimalDesireBody(): Record<string, unknown> {
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
export function withField(field: string, value: unknown, base = fullDesireBody()): Record<string, unknown> {
  const body = Object.fromEntries(Object.entries(base).filter(([k]) => k !== field));
  return value === undefined ? body : { ...body, [field]: value };
}

/** Whether `message` has an issue for exactly this path (`a.b.0: ...`). */
export function namesField(message: string, path: string): boolean {
  return message.split('; ').some((part) => part.startsWith(`${path}: `));
}

export function issuesOf(result: { success: boolean; error?: Parameters<typeof describeIssues>[0] }): string {
  if (result.success || !result.error) throw new Error('expected the parse to fail');
  return describeIssues(result.error);
}
