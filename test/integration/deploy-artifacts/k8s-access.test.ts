/**
 * k8s/ applied with kubectl 1.20 to the simulated cluster, its access read back: nothing cluster-wide, a
 * workers' Role granting exactly what the code sends (from the sources and the adapter), the API without a token.
 */
import { readFile, readdir } from 'node:fs/promises';
import { join, relative } from 'node:path';
import yaml from 'js-yaml';
import {
  ClientNodeKubernetes,
  type KubeCallReport,
  type KubeObject,
  RESOURCE_NAMES,
  type ResourceClient,
  type Verb,
  loadKubeConfig,
} from '@opi/kube';
import { ResourceRegistry } from '@opi/kube-sim';
import {
  type AppliedK8s,
  type K8sObject,
  type Meta,
  type Rule,
  type Workload,
  container,
  useAppliedK8s,
} from '../../support/k8s-apply.js';
import { read, repo, walk, workerCommand } from '../../support/repo-files.js';

describe('k8s/ on the simulated cluster (kubectl 1.20 apply -k)', () => {
  const k8s = useAppliedK8s();
  const { ok, get } = k8s;
  let sim: AppliedK8s['sim'];
  let config: Record<string, string>;
  beforeAll(() => {
    ({ sim, config } = k8s);
  });

  it('grants nothing cluster-wide and stays in its two namespaces', async () => {
    const docs = yaml.loadAll(await ok(['kustomize', 'k8s/'])) as K8sObject[];
    expect(docs.filter((d) => d.kind.startsWith('Cluster'))).toEqual([]);
    const namespaces = new Set(docs.filter((d) => d.kind !== 'Namespace').map((d) => d.metadata.namespace));
    expect(namespaces).toEqual(new Set(['opi-system', 'cf-workloads']));
  });

  it('gives the workers a Role with exactly the verbs the code sends', async () => {
    // What the service calls through the port: `kube.<resource>.<verb>(…)` and `kube.<method>(…)` wherever
    // the port is used (deps.kube, kube), plus what the cache's reflectors list and watch (their list goes
    // through `kube[resource]`, so the resources are read where the reflectors are made).
    // libs/kube holds callers too (the reflectors, the leader election), but not its own implementations
    // of the port, which call nothing through it.
    const implementations = new Set(['client-node/adapter.ts', 'testing/with-faults.ts', 'port/port.ts']);
    const sources: string[] = [];
    for (const group of ['apps', 'libs']) {
      for (const ws of await readdir(join(repo, group))) {
        if (group === 'libs' && ws === 'kube-sim') continue;
        const src = join(repo, group, ws, 'src');
        const files = await walk(src).catch(() => []);
        for (const f of files.filter((x) => x.endsWith('.ts') && !/\.(test|fixture)\.ts$/.test(x))) {
          if (group === 'libs' && ws === 'kube' && implementations.has(relative(src, f))) continue;
          sources.push(await readFile(f, 'utf8'));
        }
      }
    }
    const all = sources.join('\n');
    const used = new Set<string>();
    for (const m of all.matchAll(/\bkube\s*\.\s*(\w+)\s*\.\s*(\w+)\s*\(/g)) used.add(`${m[1]}.${m[2]}`);
    for (const m of all.matchAll(/\bkube\s*\.\s*(getNamespace|getServerVersion|watch)\s*\(/g))
      used.add(m[1] ?? '');
    // A client handed on whole (workload-verbs.ts picks `kube.deployments` or `kube.statefulsets`) is used
    // with every verb it has.
    const whole = new Set([...all.matchAll(/\bkube\s*\.\s*(\w+)\b(?!\s*[.(\w])/g)].map((m) => m[1] ?? ''));
    const cache = await read('apps/worker/src/cache/cluster-cache.ts');
    for (const m of cache.matchAll(/(?:resource: |workloads\()'(\w+)'/g)) used.add(`${m[1]}.list`);

    // What the port offers: each resource's client has only its verbs, so every one must be used.
    const ns = config['OPI_NAMESPACE'] ?? '';
    const calls: KubeCallReport[] = [];
    const kube = new ClientNodeKubernetes(loadKubeConfig({ kubeconfigYaml: sim.kubeconfig() }), {
      onCall: (c) => calls.push(c),
    });
    const named = { metadata: { name: 'rbac-probe' } };
    const exercise = new Map<string, () => Promise<unknown>>();
    for (const r of RESOURCE_NAMES) {
      const client = kube[r] as Partial<ResourceClient<KubeObject>>;
      for (const verb of Object.keys(client) as Verb[]) {
        if (whole.has(r)) used.add(`${r}.${verb}`);
        const probe: Record<Verb, () => Promise<unknown> | undefined> = {
          get: () => client.get?.(ns, 'x'),
          create: () => client.create?.(ns, named),
          replace: () => client.replace?.(ns, named),
          delete: () => client.delete?.(ns, 'x'),
          list: () => client.list?.(ns),
          annotate: () => client.annotate?.(ns, 'x', { a: 'b' }),
        };
        exercise.set(`${r}.${verb}`, async () => probe[verb]());
      }
    }
    exercise.set('getNamespace', () => kube.getNamespace(ns));
    exercise.set('getServerVersion', () => kube.getServerVersion());
    // One stream of each watched kind, stopped once it is open: the report comes when it ends.
    exercise.set('watch', async () => {
      for (const resource of ['deployments', 'statefulsets', 'pods', 'jobs', 'events'] as const) {
        const w = kube.watch(resource, ns, { timeoutSeconds: 5 }, () => undefined);
        await new Promise((resolve) => setTimeout(resolve, 100));
        w.stop();
        await w.done;
      }
    });
    expect([...used].filter((u) => !exercise.has(u))).toEqual([]);
    expect([...exercise.keys()].filter((e) => !used.has(e))).toEqual([]);
    expect([...used]).toEqual(expect.arrayContaining(['deployments.create', 'pods.list', 'jobs.create']));

    // What each of those sends, from the adapter itself (the answers do not matter, only the requests).
    const registry = new ResourceRegistry();
    const expected = new Set<string>();
    for (const [m, run] of exercise) {
      calls.length = 0;
      await run().catch(() => undefined);
      expect([m, calls.length > 0]).toEqual([m, true]);
      for (const c of calls) {
        // /version is no resource: every client may read it (the system:public-info-viewer ClusterRole).
        if (c.resource === 'version') continue;
        const group = registry.types.find((t) => t.plural === c.resource)?.group;
        expect([c.resource, group]).toEqual([c.resource, expect.any(String)]);
        expected.add(`${group ?? ''}/${c.resource}:${c.verb}`);
      }
    }
    kube.close();

    const role = await get<K8sObject & { rules: Rule[] }>('role', 'opi-worker', ns);
    const granted = new Set<string>();
    for (const r of role.rules) {
      expect(r.resourceNames ?? r.nonResourceURLs).toBeUndefined();
      for (const g of r.apiGroups)
        for (const res of r.resources) for (const v of r.verbs) granted.add(`${g}/${res}:${v}`);
    }
    expect([...granted].sort()).toEqual([...expected].sort());

    const binding = await get<K8sObject & { roleRef: { kind: string; name: string }; subjects: Meta[] }>(
      'rolebinding',
      'opi-worker',
      ns,
    );
    expect(binding.roleRef).toMatchObject({ kind: 'Role', name: 'opi-worker' });
    expect(binding.subjects).toEqual([
      { kind: 'ServiceAccount', name: 'opi-worker', namespace: 'opi-system' },
    ]);
    // A namespaced Role can only list one namespace: the sync must stay there.
    expect(config['OPI_SYNC_ALL_NAMESPACES']).toBe('false');
  });

  it('runs the workers under that account and the API with no token at all', async () => {
    const worker = await get<Workload>('deployment', 'opi-worker', 'opi-system');
    const api = await get<Workload>('deployment', 'opi-api', 'opi-system');
    expect(worker.spec.template.spec.serviceAccountName).toBe('opi-worker');
    expect(api.spec.template.spec.serviceAccountName).toBe('opi-api');
    expect(api.spec.template.spec.automountServiceAccountToken).toBe(false);
    expect(container(worker, 'worker').command).toEqual(await workerCommand());
    // The API runs the image's CMD.
    expect(container(api, 'api').command).toBeUndefined();
  });
});
