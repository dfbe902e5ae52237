/**
 * desireLrpSchema against CC's desire bodies (docs/cloud-controller.md): a complete body parses,
 * ignored and unknown fields are accepted, and every invalid body is refused with a message that names the
 * offending field (the API answers it as `{"error": {"message"}}`).
 */
import { describe, expect, it } from '@jest/globals';
import { issuesOf, namesField } from './issues.fixture.js';
import { GUID, PROCESS_GUID, VERSION, fullDesireBody, minimalDesireBody, withField } from './testing.js';
import { describeIssues, desireLrpSchema } from './schemas.js';

describe('desireLrpSchema: valid bodies', () => {
  it('parses a complete CC desire body, including ignored and unknown fields', () => {
    const r = desireLrpSchema.safeParse(fullDesireBody());
    expect(r.success).toBe(true);
    if (!r.success) return;
    expect(r.data).toEqual({
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
      placement_tags: ['isolation-segment-a'],
      routes: {
        'cf-router': [
          { hostname: 'app.example.com', port: 8080 },
          { hostname: 'app.example.com/api', port: 8080 },
        ],
      },
      egress_rules: [
        { protocol: 'udp', destinations: ['1.2.3.4'], ports: [8080], log: false },
        { protocol: 'tcp', destinations: ['5.6.7.8'], portRange: { start: 9090, end: 9095 }, log: true },
      ],
    });
  });

  it('fills the defaults of every optional field', () => {
    const r = desireLrpSchema.safeParse(minimalDesireBody());
    expect(r.success).toBe(true);
    if (!r.success) return;
    expect(r.data).toEqual({
      guid: GUID,
      version: VERSION,
      process_guid: PROCESS_GUID,
      process_type: 'web',
      app_guid: '',
      app_name: '',
      space_guid: '',
      space_name: '',
      organization_guid: '',
      organization_name: '',
      namespace: '',
      ports: [],
      environment: {},
      instances: 1,
      last_updated: '',
      health_check_type: 'process',
      health_check_http_endpoint: '',
      health_check_timeout_ms: 0,
      start_timeout_ms: 0,
      memory_mb: 128,
      disk_mb: 256,
      cpu_weight: 1,
      volume_mounts: [],
      lifecycle: { docker_lifecycle: { image: 'nginx', command: [] } },
      user_defined_annotations: {},
      egress_rules: [],
      placement_tags: [],
    });
  });

  it.each<[string, Record<string, unknown>]>([
    ['zero instances', withField('instances', 0)],
    ['an empty namespace', withField('namespace', '')],
    ['an empty command', withField('lifecycle', { docker_lifecycle: { image: 'nginx', command: [] } })],
    ['cpu_weight 1', withField('cpu_weight', 1)],
    ['port 1 and port 65535', withField('ports', [1, 65535])],
    ['a none health check without ports', { ...withField('ports', []), health_check_type: 'none' }],
    ['a process health check without ports', { ...withField('ports', []), health_check_type: 'process' }],
    [
      'a buildpack lifecycle (older CCs)',
      withField('lifecycle', {
        buildpack_lifecycle: {
          droplet_hash: 'ab12CD34ef',
          droplet_guid: 'droplet-guid-1',
          start_command: 'bundle exec rackup',
        },
      }),
    ],
    ['last_updated as an odd string', withField('last_updated', '1589212345.1234560')],
    ['an annotation key without a prefix', withField('user_defined_annotations', { scrape: 'true' })],
    [
      'an annotation key whose prefix is 253 characters',
      withField('user_defined_annotations', {
        [`${'a'.repeat(63)}.${'b'.repeat(63)}.${'c'.repeat(63)}.${'d'.repeat(61)}/x`]: 'y',
      }),
    ],
    // CC allows these; the target cluster decides (decision 7).
    [
      'environment names some clusters refuse',
      withField('environment', { 'MY VAR': 'a', '1ABC': 'b', 'A=B': 'c', 'Logging:Level': 'd' }),
    ],
  ])('accepts %s', (_what, body) => {
    const r = desireLrpSchema.safeParse(body);
    if (!r.success) throw new Error(describeIssues(r.error));
    expect(r.success).toBe(true);
  });

  it('keeps last_updated byte for byte', () => {
    for (const s of ['1589212345.123456', '1589212345.1234560', '1e3', ' 00.10 ', 'ünïcødé ✓ 🚀']) {
      const r = desireLrpSchema.parse(withField('last_updated', s));
      expect(r.last_updated).toBe(s);
    }
  });
});

describe('desireLrpSchema: invalid bodies name the field', () => {
  const docker = (extra: Record<string, unknown>) => ({ docker_lifecycle: { image: 'nginx', ...extra } });
  const buildpack = { droplet_hash: 'abc123', droplet_guid: 'droplet-1', start_command: 'run' };

  it.each<[string, unknown, string]>([
    // Missing required fields.
    ['missing guid', withField('guid', undefined), 'guid'],
    ['missing version', withField('version', undefined), 'version'],
    ['missing process_guid', withField('process_guid', undefined), 'process_guid'],
    ['missing instances', withField('instances', undefined), 'instances'],
    ['missing memory_mb', withField('memory_mb', undefined), 'memory_mb'],
    ['missing disk_mb', withField('disk_mb', undefined), 'disk_mb'],
    ['missing lifecycle', withField('lifecycle', undefined), 'lifecycle'],
    // Wrong types.
    ['guid as a number', withField('guid', 42), 'guid'],
    ['instances as a string', withField('instances', '3'), 'instances'],
    ['instances as a fraction', withField('instances', 1.5), 'instances'],
    ['memory_mb as a string', withField('memory_mb', '256'), 'memory_mb'],
    ['last_updated as a number', withField('last_updated', 1589212345.123456), 'last_updated'],
    ['environment as an array', withField('environment', [{ name: 'A', value: 'b' }]), 'environment'],
    [
      'an environment value that is not a string',
      withField('environment', { PORT: 8080 }),
      'environment.PORT',
    ],
    ['ports as a number', withField('ports', 8080), 'ports'],
    ['ports as a string', withField('ports', '8080'), 'ports'],
    ['a port as a string', withField('ports', ['8080']), 'ports.0'],
    ['volume_mounts as an object', withField('volume_mounts', { volume_id: 'a' }), 'volume_mounts'],
    ['lifecycle as a string', withField('lifecycle', 'docker'), 'lifecycle'],
    [
      'command as a string',
      withField('lifecycle', docker({ command: 'run' })),
      'lifecycle.docker_lifecycle.command',
    ],
    [
      'user_defined_annotations value a number',
      withField('user_defined_annotations', { a: 1 }),
      'user_defined_annotations.a',
    ],
    // Ranges.
    ['disk_mb 0', withField('disk_mb', 0), 'disk_mb'],
    ['memory_mb 0', withField('memory_mb', 0), 'memory_mb'],
    ['cpu_weight 0', withField('cpu_weight', 0), 'cpu_weight'],
    ['cpu_weight 101', withField('cpu_weight', 101), 'cpu_weight'],
    ['negative instances', withField('instances', -1), 'instances'],
    ['too many instances', withField('instances', 10_001), 'instances'],
    [
      'a negative health_check_timeout_ms',
      withField('health_check_timeout_ms', -1),
      'health_check_timeout_ms',
    ],
    ['port 70000', withField('ports', [8080, 70000]), 'ports.1'],
    ['port 0', withField('ports', [0]), 'ports.0'],
    ['a fractional port', withField('ports', [80.5]), 'ports.0'],
    // Formats.
    ['a guid with a slash', { ...withField('guid', 'a/b'), process_guid: `a/b-${VERSION}` }, 'guid'],
    [
      'a guid of 64 characters',
      { ...withField('guid', 'a'.repeat(64)), process_guid: `${'a'.repeat(64)}-${VERSION}` },
      'guid',
    ],
    ['an empty guid', { ...withField('guid', ''), process_guid: `-${VERSION}` }, 'guid'],
    ['a version with a slash', { ...withField('version', 'v/1'), process_guid: `${GUID}-v/1` }, 'version'],
    ['process_guid not guid-version', withField('process_guid', `${GUID}-other`), 'process_guid'],
    ['process_guid in the wrong order', withField('process_guid', `${VERSION}-${GUID}`), 'process_guid'],
    ['an empty environment name', withField('environment', { '': 'x' }), 'environment.'],
    ['a namespace with capitals', withField('namespace', 'CF-Workloads'), 'namespace'],
    [
      'a volume_id with capitals',
      withField('volume_mounts', [{ volume_id: 'My_Claim', mount_dir: '/data' }]),
      'volume_mounts.0.volume_id',
    ],
    [
      'a missing volume_id',
      withField('volume_mounts', [{ mount_dir: '/data' }]),
      'volume_mounts.0.volume_id',
    ],
    [
      // Found by the fuzz tests: the pods' annotations would be over the API server's 256 KiB.
      'user_defined_annotations over 128 KiB in all',
      withField('user_defined_annotations', { 'a.io/x': 'v'.repeat(70_000), 'a.io/y': 'v'.repeat(70_000) }),
      'user_defined_annotations',
    ],
    [
      // Found by the fuzz tests: the Deployment would be invalid (mountPath must be unique).
      'two mounts at one mount_dir',
      withField('volume_mounts', [
        { volume_id: 'claim-a', mount_dir: '/data' },
        { volume_id: 'claim-b', mount_dir: '/data' },
      ]),
      'volume_mounts.1.mount_dir',
    ],
    [
      'a relative mount_dir',
      withField('volume_mounts', [{ volume_id: 'claim', mount_dir: 'data' }]),
      'volume_mounts.0.mount_dir',
    ],
    [
      'an annotation key with a space',
      withField('user_defined_annotations', { 'bad key': 'x' }),
      'user_defined_annotations.bad key',
    ],
    [
      // Found by the fuzz tests: the API server refuses a prefix over 253 (the pods would never be made).
      'an annotation key whose prefix is over 253 characters',
      withField('user_defined_annotations', {
        [`${'a'.repeat(63)}.${'b'.repeat(63)}.${'c'.repeat(63)}.${'d'.repeat(62)}/x`]: 'y',
      }),
      `user_defined_annotations.${'a'.repeat(63)}.${'b'.repeat(63)}.${'c'.repeat(63)}.${'d'.repeat(62)}/x`,
    ],
    [
      'an annotation key with two slashes',
      withField('user_defined_annotations', { 'a/b/c': 'x' }),
      'user_defined_annotations.a/b/c',
    ],
    [
      'an annotation key with a capitalised prefix',
      withField('user_defined_annotations', { 'Prometheus.io/scrape': 'x' }),
      'user_defined_annotations.Prometheus.io/scrape',
    ],
    // Health checks.
    ['an unknown health_check_type', withField('health_check_type', 'tcp'), 'health_check_type'],
    ['an http health check without ports', withField('ports', []), 'ports'],
    [
      'a port health check without ports',
      { ...withField('ports', undefined), health_check_type: 'port' },
      'ports',
    ],
    [
      'the default (port) health check without ports',
      { ...minimalDesireBody(), health_check_type: undefined },
      'ports',
    ],
    // Lifecycles.
    [
      'both lifecycles',
      withField('lifecycle', { ...docker({}), buildpack_lifecycle: buildpack }),
      'lifecycle',
    ],
    ['neither lifecycle', withField('lifecycle', {}), 'lifecycle'],
    ['an empty image', withField('lifecycle', docker({ image: '' })), 'lifecycle.docker_lifecycle.image'],
    ['a blank image', withField('lifecycle', docker({ image: '   ' })), 'lifecycle.docker_lifecycle.image'],
    ['a missing image', withField('lifecycle', { docker_lifecycle: {} }), 'lifecycle.docker_lifecycle.image'],
    [
      'a droplet_hash that is not hex',
      withField('lifecycle', { buildpack_lifecycle: { ...buildpack, droplet_hash: 'xyz' } }),
      'lifecycle.buildpack_lifecycle.droplet_hash',
    ],
    [
      'a droplet_guid with a slash',
      withField('lifecycle', { buildpack_lifecycle: { ...buildpack, droplet_guid: 'a/b' } }),
      'lifecycle.buildpack_lifecycle.droplet_guid',
    ],
  ])('refuses %s', (_what, body, field) => {
    const message = issuesOf(desireLrpSchema.safeParse(body));
    expect(namesField(message, field)).toBe(true);
  });

  it.each<[string, unknown]>([
    ['an array', [fullDesireBody()]],
    ['null', null],
    ['a string', 'body'],
    ['a number', 7],
  ])('refuses a body that is %s, naming the body', (_what, body) => {
    const message = issuesOf(desireLrpSchema.safeParse(body));
    expect(namesField(message, 'body')).toBe(true);
  });

  it('names every field of an empty object that must be there', () => {
    const message = issuesOf(desireLrpSchema.safeParse({}));
    for (const field of [
      'guid',
      'version',
      'process_guid',
      'instances',
      'memory_mb',
      'disk_mb',
      'lifecycle',
    ]) {
      expect(namesField(message, field)).toBe(true);
    }
  });

  it('reports at most ten issues', () => {
    const keys = Object.fromEntries(Array.from({ length: 20 }, (_, i) => [`bad key ${i}`, 'x']));
    const message = issuesOf(desireLrpSchema.safeParse(withField('user_defined_annotations', keys)));
    expect(message.split('; ')).toHaveLength(10);
  });
});
