/** A complete DesiredLrp for tests: every field set to a value that shows up where it lands. */
import type { DesiredLrp } from '@opi/domain';

export const GUID = '3c5fb5a7-3f2e-4d67-9f7a-2b0c7e1b9a11';
export const VERSION = '8d6e3c2a-1b4f-4e5d-9c8b-7a6f5e4d3c2b';

export function sampleLrp(overrides: Partial<DesiredLrp> = {}): DesiredLrp {
  return {
    processGuid: `${GUID}-${VERSION}`,
    guid: GUID,
    version: VERSION,
    processType: 'web',
    appGuid: 'a1b2c3d4-0000-4000-8000-000000000001',
    appName: 'My App',
    spaceName: 'dev',
    spaceGuid: 'a1b2c3d4-0000-4000-8000-000000000002',
    orgGuid: 'a1b2c3d4-0000-4000-8000-000000000003',
    orgName: 'acme',
    namespace: 'cf-workloads',
    ports: [8080, 9090],
    environment: { ZED: 'last', ALPHA: 'first', VCAP_APPLICATION: '{"name":"my-app"}' },
    instances: 3,
    annotation: '1589212345.123456',
    healthCheck: { type: 'http', httpEndpoint: '/health', timeoutMs: 30_000 },
    startTimeoutMs: 90_000,
    memoryMb: 256,
    diskMb: 1024,
    cpuWeight: 25,
    volumeMounts: [{ claimName: 'data-claim', mountPath: '/data' }],
    image: 'registry.example.com/team/app:1.2',
    command: ['/bin/sh', '-c', 'bundle exec rackup'],
    registry: { server: 'registry.example.com', username: 'robot', password: 's3cr:et' },
    userAnnotations: { 'prometheus.io/scrape': 'true', 'prometheus.io/port': '9090' },
    routes: [
      { hostname: 'my-app.example.com', port: 8080 },
      { hostname: 'my-app.example.com/api', port: 8080 },
      { hostname: '*.example.com' },
    ],
    egressRules: [
      { protocol: 'tcp', destinations: ['10.0.0.0/8'], ports: [443, 8443], log: false },
      {
        protocol: 'udp',
        destinations: ['10.1.0.1-10.1.0.9'],
        portRange: { start: 5000, end: 5100 },
        log: true,
        annotations: ['security_group_id:sg-1'],
      },
      { protocol: 'icmp', destinations: ['0.0.0.0/0'], icmpInfo: { type: 8, code: -1 }, log: false },
    ],
    placementTags: ['iso-seg-1'],
    ...overrides,
  };
}
