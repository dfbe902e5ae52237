/** toDesiredLrp: CC's validated desire request → the domain's DesiredLrp. */
import { describe, expect, it } from '@jest/globals';
import { ValidationError } from '@opi/domain';
import { DOCKER_HUB_SERVER, registryServerOf } from '@opi/domain';
import { desireLrpSchema } from './schemas.js';
import { type DesireDefaults, toDesiredLrp } from './to-domain.js';

const GUID = '0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0';
const VERSION = '11111111-2222-3333-4444-555555555555';
const PROCESS_GUID = `${GUID}-${VERSION}`;
const DEFAULTS: DesireDefaults = { namespace: 'cf-workloads', dropletRegistry: 'droplets.example.com:5000' };

function request(overrides: Record<string, unknown> = {}) {
  return desireLrpSchema.parse({
    guid: GUID,
    version: VERSION,
    process_guid: PROCESS_GUID,
    process_type: 'worker',
    app_guid: 'app-guid',
    app_name: 'my-app',
    space_guid: 'space-guid',
    space_name: 'dev',
    organization_guid: 'org-guid',
    organization_name: 'acme',
    ports: [8080, 9090],
    environment: { A: '1', VCAP_SERVICES: '{}' },
    instances: 2,
    last_updated: '1589212345.123456',
    health_check_type: 'http',
    health_check_http_endpoint: '/health',
    health_check_timeout_ms: 30000,
    start_timeout_ms: 60000,
    memory_mb: 512,
    disk_mb: 2048,
    cpu_weight: 50,
    volume_mounts: [{ volume_id: 'claim-a', mount_dir: '/data' }],
    lifecycle: { docker_lifecycle: { image: 'team/app:1', command: ['/bin/sh', '-c', 'run'] } },
    user_defined_annotations: { 'prometheus.io/scrape': 'true' },
    routes: { 'cf-router': [{ hostname: 'my-app.example.com/api', port: 8080 }] },
    placement_tags: ['segment-a'],
    egress_rules: [
      {
        protocol: 'tcp',
        destinations: ['10.0.0.1-10.0.0.9'],
        portRange: { start: 80, end: 443 },
        annotations: ['security_group_id:sg-1'],
      },
      { protocol: 'icmp', destinations: ['0.0.0.0/0'], icmpInfo: { type: 8 }, log: true },
    ],
    ...overrides,
  });
}

describe('toDesiredLrp', () => {
  it('maps every field of a docker desire without credentials', () => {
    const lrp = toDesiredLrp(request(), DEFAULTS);
    expect(lrp).toEqual({
      processGuid: PROCESS_GUID,
      guid: GUID,
      version: VERSION,
      processType: 'worker',
      appGuid: 'app-guid',
      appName: 'my-app',
      spaceGuid: 'space-guid',
      spaceName: 'dev',
      orgGuid: 'org-guid',
      orgName: 'acme',
      namespace: 'cf-workloads',
      ports: [8080, 9090],
      environment: { A: '1', VCAP_SERVICES: '{}' },
      instances: 2,
      annotation: '1589212345.123456',
      healthCheck: { type: 'http', httpEndpoint: '/health', timeoutMs: 30000 },
      startTimeoutMs: 60000,
      memoryMb: 512,
      diskMb: 2048,
      cpuWeight: 50,
      volumeMounts: [{ claimName: 'claim-a', mountPath: '/data' }],
      image: 'team/app:1',
      command: ['/bin/sh', '-c', 'run'],
      userAnnotations: { 'prometheus.io/scrape': 'true' },
      routes: [{ hostname: 'my-app.example.com/api', port: 8080 }],
      placementTags: ['segment-a'],
      egressRules: [
        {
          protocol: 'tcp',
          destinations: ['10.0.0.1-10.0.0.9'],
          portRange: { start: 80, end: 443 },
          annotations: ['security_group_id:sg-1'],
          log: false,
        },
        { protocol: 'icmp', destinations: ['0.0.0.0/0'], icmpInfo: { type: 8, code: 0 }, log: true },
      ],
    });
    expect('registry' in lrp).toBe(false);
  });

  it.each<[string, string]>([
    ['registry.example.com/team/app:1.2', 'registry.example.com'],
    ['localhost:5000/app', 'localhost:5000'],
    ['team/app:1', DOCKER_HUB_SERVER],
    ['nginx', DOCKER_HUB_SERVER],
  ])('attaches docker credentials for %j to the server %j', (image, server) => {
    const lrp = toDesiredLrp(
      request({
        lifecycle: {
          docker_lifecycle: { image, command: [], registry_username: 'user', registry_password: 'p:ss' },
        },
      }),
      DEFAULTS,
    );
    expect(lrp.image).toBe(image);
    expect(lrp.command).toEqual([]);
    expect(lrp.registry).toEqual({ server: registryServerOf(image), username: 'user', password: 'p:ss' });
    expect(lrp.registry?.server).toBe(server);
  });

  it('attaches credentials when only one of username and password is given', () => {
    const onlyUser = toDesiredLrp(
      request({ lifecycle: { docker_lifecycle: { image: 'r.example.com/a', registry_username: 'u' } } }),
      DEFAULTS,
    );
    expect(onlyUser.registry).toEqual({ server: 'r.example.com', username: 'u', password: '' });
    const onlyPassword = toDesiredLrp(
      request({ lifecycle: { docker_lifecycle: { image: 'r.example.com/a', registry_password: 'p' } } }),
      DEFAULTS,
    );
    expect(onlyPassword.registry).toEqual({ server: 'r.example.com', username: '', password: 'p' });
  });

  it('attaches no credentials when both are empty', () => {
    const lrp = toDesiredLrp(
      request({
        lifecycle: {
          docker_lifecycle: { image: 'r.example.com/a', registry_username: '', registry_password: '' },
        },
      }),
      DEFAULTS,
    );
    expect('registry' in lrp).toBe(false);
  });

  it('runs a buildpack droplet from the droplet registry with its start command', () => {
    const lrp = toDesiredLrp(
      request({
        lifecycle: {
          buildpack_lifecycle: {
            droplet_hash: 'deadbeef01',
            droplet_guid: 'droplet-guid-1',
            start_command: 'bundle exec rackup -p $PORT',
          },
        },
      }),
      DEFAULTS,
    );
    expect(lrp.image).toBe('droplets.example.com:5000/cloudfoundry/droplet-guid-1:deadbeef01');
    expect(lrp.command).toEqual(['/bin/sh', '-c', 'bundle exec rackup -p $PORT']);
    expect('registry' in lrp).toBe(false);
  });

  it('leaves the command empty for a buildpack droplet without a start command', () => {
    const lrp = toDesiredLrp(
      request({ lifecycle: { buildpack_lifecycle: { droplet_hash: 'abc', droplet_guid: 'd1' } } }),
      DEFAULTS,
    );
    expect(lrp.image).toBe('droplets.example.com:5000/cloudfoundry/d1:abc');
    expect(lrp.command).toEqual([]);
  });

  it.each<[string, Record<string, unknown>, string]>([
    ['no namespace', {}, 'cf-workloads'],
    ['an empty namespace', { namespace: '' }, 'cf-workloads'],
    ['the default namespace', { namespace: 'cf-workloads' }, 'cf-workloads'],
    ['an allowed namespace', { namespace: 'space-dev' }, 'space-dev'],
  ])('with %s uses %j', (_what, overrides, namespace) => {
    const defaults = { ...DEFAULTS, allowedNamespaces: ['space-dev'] };
    expect(toDesiredLrp(request(overrides), defaults).namespace).toBe(namespace);
  });

  it('refuses a namespace that is not allowed, naming it and the allowed ones', () => {
    expect(() => toDesiredLrp(request({ namespace: 'kube-system' }), DEFAULTS)).toThrow(
      'namespace "kube-system" is not allowed: this server runs workloads in cf-workloads (OPI_ALLOWED_NAMESPACES)',
    );
    const some = { ...DEFAULTS, allowedNamespaces: ['space-dev'] };
    expect(() => toDesiredLrp(request({ namespace: 'kube-system' }), some)).toThrow(ValidationError);
    const any = { ...DEFAULTS, allowedNamespaces: 'any' as const };
    expect(toDesiredLrp(request({ namespace: 'kube-system' }), any).namespace).toBe('kube-system');
  });

  it('keeps the annotation byte for byte', () => {
    for (const s of ['1589212345.1234560', 'ünïcødé ✓ 🚀', '']) {
      expect(toDesiredLrp(request({ last_updated: s }), DEFAULTS).annotation).toBe(s);
    }
  });
});
