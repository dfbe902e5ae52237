import { describe, expect, it } from '@jest/globals';
import type { DesiredLrp } from '@opi/domain';
import { lrpToDeployment } from './deployment.js';
import type { Container, Deployment, DeploymentSpec, PodSpec } from '@opi/kube-objects';
import { desiredLrpJson } from './labels.js';
import { GUID, VERSION, sampleLrp } from './lrp.fixture.js';
import { workloadName } from './names.js';

type Built = Deployment & { spec: DeploymentSpec };
const build = (overrides: Partial<DesiredLrp> = {}, runAsNonRoot = true): Built =>
  lrpToDeployment(sampleLrp(overrides), { runAsNonRoot });
const pod = (d: Built): PodSpec => d.spec.template.spec!;
const app = (d: Built): Container => pod(d).containers[0]!;
const env = (d: Built, name: string) => app(d).env?.find((e) => e.name === name);

const PROCESS_GUID = `${GUID}-${VERSION}`;
const identity = { 'cloudfoundry.org/guid': GUID, 'cloudfoundry.org/version': VERSION };
const labels = {
  ...identity,
  'cloudfoundry.org/source_type': 'APP',
  'cloudfoundry.org/app_guid': 'a1b2c3d4-0000-4000-8000-000000000001',
  'cloudfoundry.org/process_type': 'web',
  'cloudfoundry.org/space_guid': 'a1b2c3d4-0000-4000-8000-000000000002',
  'cloudfoundry.org/org_guid': 'a1b2c3d4-0000-4000-8000-000000000003',
  'app.kubernetes.io/managed-by': 'opi-server',
};
const fieldRef = (name: string, fieldPath: string) => ({
  name,
  valueFrom: { fieldRef: { apiVersion: 'v1', fieldPath } },
});

describe('lrpToDeployment', () => {
  it('builds the whole Deployment of a full desire', () => {
    const lrp = sampleLrp();
    const check = { httpGet: { path: '/health', port: 8080 } };
    expect(lrpToDeployment(lrp, { runAsNonRoot: true })).toEqual({
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      metadata: {
        name: workloadName(lrp),
        namespace: 'cf-workloads',
        labels,
        annotations: {
          'cloudfoundry.org/process_guid': PROCESS_GUID,
          'cloudfoundry.org/last_updated': '1589212345.123456',
          'cloudfoundry.org/app_name': 'My App',
          'cloudfoundry.org/space_name': 'dev',
          'cloudfoundry.org/org_name': 'acme',
          'cloudfoundry.org/desired_lrp': desiredLrpJson(lrp),
          'cloudfoundry.org/placement_tags': '["iso-seg-1"]',
          'cloudfoundry.org/routes': JSON.stringify(lrp.routes),
          'cloudfoundry.org/egress_rules': JSON.stringify(lrp.egressRules),
        },
      },
      spec: {
        replicas: 3,
        selector: { matchLabels: identity },
        strategy: { type: 'RollingUpdate', rollingUpdate: { maxSurge: '25%', maxUnavailable: '25%' } },
        revisionHistoryLimit: 2,
        template: {
          metadata: {
            labels,
            annotations: {
              'prometheus.io/scrape': 'true',
              'prometheus.io/port': '9090',
              'cloudfoundry.org/process_guid': PROCESS_GUID,
            },
          },
          spec: {
            containers: [
              {
                name: 'opi',
                image: 'registry.example.com/team/app:1.2',
                command: ['/bin/sh', '-c', 'bundle exec rackup'],
                env: [
                  { name: 'ALPHA', value: 'first' },
                  { name: 'VCAP_APPLICATION', value: '{"name":"my-app"}' },
                  { name: 'ZED', value: 'last' },
                  { name: 'PORT', value: '8080' },
                  { name: 'CF_INSTANCE_PORT', value: '8080' },
                  { name: 'CF_INSTANCE_ADDR', value: '0.0.0.0:8080' },
                  { name: 'CF_INSTANCE_PORTS', value: '[{"external":8080,"internal":8080}]' },
                  fieldRef('POD_NAME', 'metadata.name'),
                  fieldRef('CF_INSTANCE_GUID', 'metadata.uid'),
                  fieldRef('CF_INSTANCE_IP', 'status.podIP'),
                  fieldRef('CF_INSTANCE_INTERNAL_IP', 'status.podIP'),
                ],
                ports: [
                  { containerPort: 8080, protocol: 'TCP' },
                  { containerPort: 9090, protocol: 'TCP' },
                ],
                resources: {
                  requests: { memory: '256M', cpu: '25m', 'ephemeral-storage': '1024M' },
                  limits: { memory: '256M', 'ephemeral-storage': '1024M' },
                },
                startupProbe: { ...check, periodSeconds: 2, failureThreshold: 15 },
                livenessProbe: { ...check, periodSeconds: 10, failureThreshold: 3 },
                readinessProbe: { ...check, periodSeconds: 5, failureThreshold: 1 },
                securityContext: { allowPrivilegeEscalation: false, runAsNonRoot: true },
                volumeMounts: [{ name: 'volume-0', mountPath: '/data' }],
              },
            ],
            automountServiceAccountToken: false,
            enableServiceLinks: false,
            imagePullSecrets: [{ name: `${workloadName(lrp)}-registry` }],
            volumes: [{ name: 'volume-0', persistentVolumeClaim: { claimName: 'data-claim' } }],
            affinity: {
              podAntiAffinity: {
                preferredDuringSchedulingIgnoredDuringExecution: [
                  {
                    weight: 100,
                    podAffinityTerm: {
                      labelSelector: { matchLabels: identity },
                      topologyKey: 'kubernetes.io/hostname',
                    },
                  },
                ],
              },
            },
          },
        },
      },
    });
  });

  it('builds a minimal desire: no command, ports, probes, volumes or pull secret', () => {
    const d = build({
      ports: [],
      environment: {},
      command: [],
      healthCheck: { type: 'process', httpEndpoint: '', timeoutMs: 0 },
      volumeMounts: [],
      registry: undefined,
      userAnnotations: {},
    });
    const c = app(d);
    expect(Object.keys(c).sort()).toEqual(['env', 'image', 'name', 'resources', 'securityContext']);
    expect(c.env!.map((e) => e.name)).toEqual([
      'POD_NAME',
      'CF_INSTANCE_GUID',
      'CF_INSTANCE_IP',
      'CF_INSTANCE_INTERNAL_IP',
    ]);
    expect(Object.keys(pod(d)).sort()).toEqual([
      'affinity',
      'automountServiceAccountToken',
      'containers',
      'enableServiceLinks',
    ]);
  });

  // One row per DesiredLrp field: change it and see it land where it belongs.
  const fieldCases: [keyof DesiredLrp, Partial<DesiredLrp>, (d: Built) => unknown, unknown][] = [
    [
      'processGuid',
      { processGuid: 'p-1' },
      (d) => [
        d.metadata.name,
        d.metadata.annotations?.['cloudfoundry.org/process_guid'],
        d.spec.template.metadata?.annotations?.['cloudfoundry.org/process_guid'],
      ],
      [workloadName({ appName: 'My App', spaceName: 'dev', processGuid: 'p-1' }), 'p-1', 'p-1'],
    ],
    [
      'guid',
      { guid: 'g2' },
      (d) => [
        d.metadata.labels?.['cloudfoundry.org/guid'],
        d.spec.selector.matchLabels?.['cloudfoundry.org/guid'],
        d.spec.template.metadata?.labels?.['cloudfoundry.org/guid'],
        pod(d).affinity?.podAntiAffinity?.preferredDuringSchedulingIgnoredDuringExecution?.[0]
          ?.podAffinityTerm.labelSelector?.matchLabels?.['cloudfoundry.org/guid'],
      ],
      ['g2', 'g2', 'g2', 'g2'],
    ],
    [
      'version',
      { version: 'v2' },
      (d) => [
        d.metadata.labels?.['cloudfoundry.org/version'],
        d.spec.selector.matchLabels?.['cloudfoundry.org/version'],
        d.spec.template.metadata?.labels?.['cloudfoundry.org/version'],
        pod(d).affinity?.podAntiAffinity?.preferredDuringSchedulingIgnoredDuringExecution?.[0]
          ?.podAffinityTerm.labelSelector?.matchLabels?.['cloudfoundry.org/version'],
      ],
      ['v2', 'v2', 'v2', 'v2'],
    ],
    [
      'processType',
      { processType: 'worker' },
      (d) => d.spec.template.metadata?.labels?.['cloudfoundry.org/process_type'],
      'worker',
    ],
    [
      'appGuid',
      { appGuid: 'app-2' },
      (d) => d.spec.template.metadata?.labels?.['cloudfoundry.org/app_guid'],
      'app-2',
    ],
    [
      'appName',
      { appName: 'Shop' },
      (d) => [
        d.metadata.name?.startsWith('shop-dev-'),
        d.metadata.annotations?.['cloudfoundry.org/app_name'],
      ],
      [true, 'Shop'],
    ],
    [
      'spaceGuid',
      { spaceGuid: 'space-2' },
      (d) => d.spec.template.metadata?.labels?.['cloudfoundry.org/space_guid'],
      'space-2',
    ],
    [
      'spaceName',
      { spaceName: 'Prod' },
      (d) => [
        d.metadata.name?.startsWith('my-app-prod-'),
        d.metadata.annotations?.['cloudfoundry.org/space_name'],
      ],
      [true, 'Prod'],
    ],
    [
      'orgGuid',
      { orgGuid: 'org-2' },
      (d) => d.spec.template.metadata?.labels?.['cloudfoundry.org/org_guid'],
      'org-2',
    ],
    [
      'orgName',
      { orgName: 'Initech' },
      (d) => d.metadata.annotations?.['cloudfoundry.org/org_name'],
      'Initech',
    ],
    ['namespace', { namespace: 'space-ns' }, (d) => d.metadata.namespace, 'space-ns'],
    [
      'ports',
      { ports: [3000] },
      (d) => [
        app(d).ports,
        env(d, 'PORT')?.value,
        env(d, 'CF_INSTANCE_PORT')?.value,
        env(d, 'CF_INSTANCE_ADDR')?.value,
        env(d, 'CF_INSTANCE_PORTS')?.value,
        app(d).livenessProbe?.httpGet?.port,
      ],
      [
        [{ containerPort: 3000, protocol: 'TCP' }],
        '3000',
        '3000',
        '0.0.0.0:3000',
        '[{"external":3000,"internal":3000}]',
        3000,
      ],
    ],
    [
      'environment',
      { environment: { B: '2', A: '1' } },
      (d) => app(d).env?.slice(0, 2),
      [
        { name: 'A', value: '1' },
        { name: 'B', value: '2' },
      ],
    ],
    ['instances', { instances: 0 }, (d) => d.spec.replicas, 0],
    [
      'annotation',
      { annotation: '1600000000.5' },
      (d) => [
        d.metadata.annotations?.['cloudfoundry.org/last_updated'],
        d.spec.template.metadata?.annotations,
      ],
      ['1600000000.5', build().spec.template.metadata?.annotations],
    ],
    [
      'healthCheck',
      { healthCheck: { type: 'port', httpEndpoint: '', timeoutMs: 10_000 } },
      (d) => [app(d).startupProbe, app(d).livenessProbe, app(d).readinessProbe],
      [
        { tcpSocket: { port: 8080 }, periodSeconds: 2, failureThreshold: 5 },
        { tcpSocket: { port: 8080 }, periodSeconds: 10, failureThreshold: 3 },
        { tcpSocket: { port: 8080 }, periodSeconds: 5, failureThreshold: 1 },
      ],
    ],
    [
      'startTimeoutMs',
      { startTimeoutMs: 120_000, healthCheck: { type: 'http', httpEndpoint: '/health', timeoutMs: 0 } },
      (d) => app(d).startupProbe?.failureThreshold,
      60,
    ],
    [
      'memoryMb',
      { memoryMb: 1024 },
      (d) => [app(d).resources?.requests?.['memory'], app(d).resources?.limits?.['memory']],
      ['1024M', '1024M'],
    ],
    [
      'diskMb',
      { diskMb: 2048 },
      (d) => [
        app(d).resources?.requests?.['ephemeral-storage'],
        app(d).resources?.limits?.['ephemeral-storage'],
      ],
      ['2048M', '2048M'],
    ],
    [
      'cpuWeight',
      { cpuWeight: 100 },
      (d) => [app(d).resources?.requests?.['cpu'], app(d).resources?.limits?.['cpu']],
      ['100m', undefined],
    ],
    [
      'volumeMounts',
      {
        volumeMounts: [
          { claimName: 'a.claim', mountPath: '/a' },
          { claimName: 'b', mountPath: '/b' },
        ],
      },
      (d) => [pod(d).volumes, app(d).volumeMounts],
      [
        [
          { name: 'volume-0', persistentVolumeClaim: { claimName: 'a.claim' } },
          { name: 'volume-1', persistentVolumeClaim: { claimName: 'b' } },
        ],
        [
          { name: 'volume-0', mountPath: '/a' },
          { name: 'volume-1', mountPath: '/b' },
        ],
      ],
    ],
    ['image', { image: 'busybox:1.36' }, (d) => app(d).image, 'busybox:1.36'],
    [
      'command',
      { command: ['/bin/sh', '-c', 'node server.js'] },
      (d) => app(d).command,
      ['/bin/sh', '-c', 'node server.js'],
    ],
    ['registry', { registry: undefined }, (d) => pod(d).imagePullSecrets, undefined],
    [
      'userAnnotations',
      { userAnnotations: { 'prometheus.io/path': '/m' } },
      (d) => d.spec.template.metadata?.annotations,
      { 'prometheus.io/path': '/m', 'cloudfoundry.org/process_guid': PROCESS_GUID },
    ],
    // On the workload's metadata, never in the pod template: a change rolls nothing.
    [
      'routes',
      { routes: [{ hostname: 'new.example.com', port: 8080 }] },
      (d) => [d.metadata.annotations?.['cloudfoundry.org/routes'], d.spec.template],
      ['[{"hostname":"new.example.com","port":8080}]', build().spec.template],
    ],
    [
      'egressRules',
      { egressRules: [{ protocol: 'all', destinations: ['1.2.3.4'], log: false }] },
      (d) => [d.metadata.annotations?.['cloudfoundry.org/egress_rules'], d.spec.template],
      ['[{"protocol":"all","destinations":["1.2.3.4"],"log":false}]', build().spec.template],
    ],
    [
      'placementTags',
      { placementTags: [] },
      (d) => [d.metadata.annotations?.['cloudfoundry.org/placement_tags'], d.spec.template],
      ['[]', build().spec.template],
    ],
  ];

  it('has a mapping case for every DesiredLrp field', () => {
    expect(fieldCases.map(([field]) => field).sort()).toEqual(Object.keys(sampleLrp()).sort());
  });

  it.each(fieldCases)('maps %s', (_field, overrides, read, expected) => {
    expect(read(build(overrides))).toEqual(expected);
  });

  it.each([true, false])('takes runAsNonRoot=%s from the settings', (runAsNonRoot) => {
    expect(app(build({}, runAsNonRoot)).securityContext).toEqual({
      allowPrivilegeEscalation: false,
      runAsNonRoot,
    });
  });

  it.each<[string, Partial<DesiredLrp>]>([
    ['instances', { instances: 7 }],
    ['annotation', { annotation: '1700000000.0' }],
    ['routes', { routes: [{ hostname: 'other.example.com/x', port: 9090 }] }],
  ])('leaves the pod template alone when only %s changes (no rollout)', (_what, overrides) => {
    expect(build(overrides).spec.template).toEqual(build().spec.template);
  });

  it('is deterministic and shares no arrays with the LRP', () => {
    const lrp = sampleLrp();
    const d = lrpToDeployment(lrp, { runAsNonRoot: true });
    expect(d).toEqual(lrpToDeployment(sampleLrp(), { runAsNonRoot: true }));
    expect(app(d).command).not.toBe(lrp.command);
  });
});
