/**
 * k8s/ applied with kubectl 1.20 to the simulated cluster (twice, the second changing nothing), its
 * workloads read back: probes, hardening, Redis, autoscaling, disruption budget, network policies, settings, rollout.
 */
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { QUEUE_STATES, createMetrics } from '@opi/metrics';
import { QUEUE_NAMES } from '@opi/queue';
import { type K8sObject, type Workload, container, portOf, useAppliedK8s } from '../../support/k8s-apply.js';
import { flag } from '../../support/processes.js';
import { repo, settingsTable } from '../../support/repo-files.js';

describe('k8s/ on the simulated cluster (kubectl 1.20 apply -k)', () => {
  const k8s = useAppliedK8s();
  const { ok, get } = k8s;
  let applied: string;
  let config: Record<string, string>;
  beforeAll(() => {
    ({ applied, config } = k8s);
  });

  it('creates every object, and a second apply changes nothing', async () => {
    const created = applied.trim().split('\n');
    expect(created.every((l) => l.endsWith(' created'))).toBe(true);
    expect(created.map((l) => l.split(' ')[0]).sort()).toEqual(
      [
        'configmap/opi-config',
        'deployment.apps/opi-api',
        'deployment.apps/opi-worker',
        'horizontalpodautoscaler.autoscaling/opi-worker',
        'namespace/cf-workloads',
        'namespace/opi-system',
        'networkpolicy.networking.k8s.io/opi-api',
        'networkpolicy.networking.k8s.io/opi-default-deny-ingress',
        'networkpolicy.networking.k8s.io/opi-redis',
        'networkpolicy.networking.k8s.io/opi-worker',
        'poddisruptionbudget.policy/opi-api',
        'role.rbac.authorization.k8s.io/opi-worker',
        'rolebinding.rbac.authorization.k8s.io/opi-worker',
        'secret/opi-credentials',
        'service/opi-api',
        'service/opi-redis',
        'serviceaccount/opi-api',
        'serviceaccount/opi-worker',
        'statefulset.apps/opi-redis',
      ].sort(),
    );
    const again = (await ok(['apply', '-k', 'k8s/'])).trim().split('\n');
    // kubectl re-sends a Secret's stringData on every apply (a real cluster says "configured" too).
    expect(again.filter((l) => !l.endsWith(' unchanged') && !l.startsWith('secret/'))).toEqual([]);
  });

  it('probes /healthz and /readyz on the ports the settings open', async () => {
    const cases: [Workload, string, string][] = [
      [await get<Workload>('deployment', 'opi-api', 'opi-system'), 'api', 'OPI_ADMIN_PORT'],
      [await get<Workload>('deployment', 'opi-worker', 'opi-system'), 'worker', 'OPI_METRICS_PORT'],
    ];
    for (const [w, name, setting] of cases) {
      const c = container(w, name);
      const port = Number(config[setting]);
      expect(port).toBeGreaterThan(0);
      expect(c.livenessProbe?.httpGet?.path).toBe('/healthz');
      expect(c.readinessProbe?.httpGet?.path).toBe('/readyz');
      expect(portOf(c, c.livenessProbe?.httpGet?.port)).toBe(port);
      expect(portOf(c, c.readinessProbe?.httpGet?.port)).toBe(port);
      expect(c.envFrom).toEqual([
        { configMapRef: { name: 'opi-config' } },
        { secretRef: { name: 'opi-credentials' } },
      ]);
    }
    const service = await get<K8sObject & { spec: { ports: { port: number; targetPort: string }[] } }>(
      'service',
      'opi-api',
      'opi-system',
    );
    const api = cases[0]![0];
    expect(portOf(container(api, 'api'), service.spec.ports[0]?.targetPort)).toBe(Number(config['PORT']));
  });

  it('runs every container non-root, read-only, without privileges, with resources', async () => {
    const workloads = [
      await get<Workload>('deployment', 'opi-api', 'opi-system'),
      await get<Workload>('deployment', 'opi-worker', 'opi-system'),
      await get<Workload>('statefulset', 'opi-redis', 'opi-system'),
    ];
    for (const w of workloads) {
      const pod = w.spec.template.spec;
      expect([w.metadata.name, pod.securityContext?.runAsNonRoot]).toEqual([w.metadata.name, true]);
      expect(pod.securityContext?.runAsUser).toBeGreaterThan(0);
      for (const c of pod.containers) {
        expect([c.name, c.securityContext]).toMatchObject([
          c.name,
          { allowPrivilegeEscalation: false, readOnlyRootFilesystem: true, capabilities: { drop: ['ALL'] } },
        ]);
        expect(c.resources?.requests?.['cpu']).toBeDefined();
        expect(c.resources?.requests?.['memory']).toBeDefined();
        expect(c.resources?.limits?.['memory']).toBeDefined();
      }
    }
  });

  it('runs Redis as a StatefulSet on a claimed volume, AOF every second, never evicting', async () => {
    const redis = await get<Workload>('statefulset', 'opi-redis', 'opi-system');
    expect(redis.spec.volumeClaimTemplates?.map((v) => v.metadata.name)).toEqual(['data']);
    const args = container(redis, 'redis').args;
    expect(flag(args, '--appendonly')).toBe('yes');
    expect(flag(args, '--appendfsync')).toBe('everysec');
    expect(flag(args, '--maxmemory-policy')).toBe('noeviction');
    expect(flag(args, '--requirepass')).toBe('$(REDIS_PASSWORD)');
    await get('pvc', 'data-opi-redis-0', 'opi-system');
    expect(new URL(config['REDIS_URL'] ?? '').hostname).toBe('opi-redis');
    // Hash-tagged from the start: a later move to Redis Cluster keeps the keys.
    expect(config['OPI_QUEUE_PREFIX']).toBe('{opi}');
  });

  it('scales the workers on waiting jobs (autoscaling/v2, an External metric the service exports)', async () => {
    interface Hpa extends K8sObject {
      spec: {
        scaleTargetRef: { apiVersion: string; kind: string; name: string };
        minReplicas: number;
        maxReplicas: number;
        metrics: {
          type: string;
          external?: {
            metric: {
              name: string;
              selector: {
                matchLabels?: Record<string, string>;
                matchExpressions?: { key: string; operator: string; values: string[] }[];
              };
            };
            target: { type: string; averageValue?: string };
          };
        }[];
      };
    }
    const hpa = await get<Hpa>('hpa', 'opi-worker', 'opi-system');
    expect(hpa.apiVersion).toBe('autoscaling/v2');
    expect(hpa.spec.scaleTargetRef).toEqual({
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      name: 'opi-worker',
    });
    expect(hpa.spec.minReplicas).toBeGreaterThanOrEqual(2);
    expect(hpa.spec.maxReplicas).toBeGreaterThan(hpa.spec.minReplicas);
    const [metric] = hpa.spec.metrics;
    expect(metric?.type).toBe('External');
    const ext = metric?.external;
    expect(ext?.target.type).toBe('AverageValue');
    // The metric, its labels and their values are the service's own.
    const exposed = (await createMetrics().expose()).body;
    expect(exposed).toContain(`# TYPE ${ext?.metric.name ?? ''} gauge`);
    expect(ext?.metric.selector.matchLabels).toEqual({ state: 'waiting' });
    expect(QUEUE_STATES).toContain('waiting');
    const queues = ext?.metric.selector.matchExpressions?.find((e) => e.key === 'queue');
    expect(queues?.operator).toBe('In');
    for (const q of queues?.values ?? []) expect(Object.values(QUEUE_NAMES)).toContain(q);
    // The worker Deployment leaves the count to the HPA, so an apply does not reset it.
    expect((await readFile(join(repo, 'k8s/worker.yaml'), 'utf8')).match(/^\s+replicas:/m)).toBeNull();
  });

  it('keeps an API pod through disruptions', async () => {
    const pdb = await get<
      K8sObject & { spec: { minAvailable: number; selector: { matchLabels: Record<string, string> } } }
    >('pdb', 'opi-api', 'opi-system');
    const api = await get<Workload & { spec: { selector: { matchLabels: Record<string, string> } } }>(
      'deployment',
      'opi-api',
      'opi-system',
    );
    expect(pdb.apiVersion).toBe('policy/v1');
    expect(pdb.spec.minAvailable).toBeGreaterThanOrEqual(1);
    expect(pdb.spec.selector.matchLabels).toEqual(api.spec.selector.matchLabels);
    expect(api.spec.replicas).toBeGreaterThan(pdb.spec.minAvailable);
  });

  it('lets CC reach the API, only the API and workers reach Redis, monitoring reach the metrics', async () => {
    interface Peer {
      namespaceSelector?: { matchLabels?: Record<string, string> };
      podSelector?: { matchExpressions?: { key: string; operator: string; values: string[] }[] };
    }
    interface NetPol extends K8sObject {
      spec: {
        podSelector: { matchLabels?: Record<string, string> };
        policyTypes: string[];
        ingress?: { from: Peer[]; ports: { port: number }[] }[];
      };
    }
    const np = (name: string) => get<NetPol>('networkpolicy', name, 'opi-system');
    const rules = (p: NetPol) =>
      (p.spec.ingress ?? []).map((i) => ({
        from: i.from.map(
          (f) =>
            f.namespaceSelector?.matchLabels?.['kubernetes.io/metadata.name'] ??
            f.podSelector?.matchExpressions
              ?.find((e) => e.key === 'app.kubernetes.io/component')
              ?.values.join(','),
        ),
        ports: i.ports.map((x) => x.port),
      }));
    const deny = await np('opi-default-deny-ingress');
    expect(deny.spec).toEqual({ podSelector: {}, policyTypes: ['Ingress'] });
    const admin = Number(config['OPI_ADMIN_PORT']);
    const metrics = Number(config['OPI_METRICS_PORT']);
    expect(rules(await np('opi-api'))).toEqual([
      { from: ['cf-system'], ports: [Number(config['PORT'])] },
      { from: ['monitoring'], ports: [admin] },
    ]);
    expect(rules(await np('opi-worker'))).toEqual([{ from: ['monitoring'], ports: [metrics] }]);
    expect(rules(await np('opi-redis'))).toEqual([{ from: ['api,worker'], ports: [6379] }]);
  });

  it('names only settings that exist (the settings table), and keeps credentials in the Secret', async () => {
    const table = await settingsTable();
    const secret = await get<K8sObject & { data: Record<string, string> }>(
      'secret',
      'opi-credentials',
      'opi-system',
    );
    const names = [...Object.keys(config), ...Object.keys(secret.data)];
    for (const [kind, name, c] of [
      ['deployment', 'opi-api', 'api'],
      ['deployment', 'opi-worker', 'worker'],
    ] as const) {
      names.push(
        ...(container(await get<Workload>(kind, name, 'opi-system'), c).env ?? []).map((e) => e.name),
      );
    }
    expect(names.filter((n) => !table.has(n))).toEqual([]);
    expect(Object.keys(config).filter((k) => /PASSWORD|TOKEN/.test(k))).toEqual([]);
    // Placeholders only: no credential ships with a value.
    expect(Object.values(secret.data).filter((v) => v !== '')).toEqual([]);
  });

  it('rolls out on the cluster', async () => {
    for (const w of ['deployment/opi-api', 'deployment/opi-worker', 'statefulset/opi-redis']) {
      await ok(['rollout', 'status', w, '-n', 'opi-system', '--timeout=60s']);
    }
  });
});
