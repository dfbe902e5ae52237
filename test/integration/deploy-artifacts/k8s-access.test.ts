/**
 * k8s/ applied with kubectl 1.20 to the simulated cluster, its access read back: nothing cluster-wide, a
 * workers' Role granting exactly what the code sends (from the sources and the adapter), the API without a token.
 */
import { readFile, readdir } from 'node:fs/promises';
import { basename, join } from 'node:path';
import yaml from 'js-yaml';
import { ClientNodeKubernetes, type KubeCallReport, type KubernetesPort, loadKubeConfig } from '@opi/kube';
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
    // Which port methods the service calls: the port is `kube` wherever it is used (deps.kube, kube).
    const port = await read('libs/kube/src/port.ts');
    const body = port.slice(port.indexOf('export interface KubernetesPort'));
    const methods = [...body.matchAll(/^ {2}(\w+)(?:<[^(]*>)?\(/gm)].map((m) => m[1] ?? '');
    // libs/kube holds callers too (the reflectors, the leader election), but not its own implementations
    // of the port, which call nothing through it.
    const implementations = new Set(['client-node-adapter.ts', 'with-faults.ts', 'port.ts']);
    const sources: string[] = [];
    for (const group of ['apps', 'libs']) {
      for (const ws of await readdir(join(repo, group))) {
        if (group === 'libs' && ws === 'kube-sim') continue;
        const src = join(repo, group, ws, 'src');
        const files = await walk(src).catch(() => []);
        for (const f of files.filter((x) => x.endsWith('.ts') && !/\.(test|fixture)\.ts$/.test(x))) {
          if (group === 'libs' && ws === 'kube' && implementations.has(basename(f))) continue;
          sources.push(await readFile(f, 'utf8'));
        }
      }
    }
    const used = methods.filter((m) =>
      sources.some((s) => new RegExp(`\\bkube\\s*\\.\\s*${m}\\s*\\(`).test(s)),
    );
    expect(used).toEqual(expect.arrayContaining(['createDeployment', 'listPods', 'createJob']));

    // What each of those sends, from the adapter itself (the answers do not matter, only the requests).
    const ns = config['OPI_NAMESPACE'] ?? '';
    const named = { metadata: { name: 'rbac-probe' } };
    const exercise: { [K in keyof KubernetesPort]: (k: KubernetesPort) => Promise<unknown> } = {
      getDeployment: (k) => k.getDeployment(ns, 'x'),
      createDeployment: (k) =>
        k.createDeployment(ns, { apiVersion: 'apps/v1', kind: 'Deployment', ...named }),
      replaceDeployment: (k) =>
        k.replaceDeployment(ns, { apiVersion: 'apps/v1', kind: 'Deployment', ...named }),
      deleteDeployment: (k) => k.deleteDeployment(ns, 'x'),
      listDeployments: (k) => k.listDeployments(ns),
      getStatefulSet: (k) => k.getStatefulSet(ns, 'x'),
      createStatefulSet: (k) =>
        k.createStatefulSet(ns, { apiVersion: 'apps/v1', kind: 'StatefulSet', ...named }),
      replaceStatefulSet: (k) =>
        k.replaceStatefulSet(ns, { apiVersion: 'apps/v1', kind: 'StatefulSet', ...named }),
      deleteStatefulSet: (k) => k.deleteStatefulSet(ns, 'x'),
      listStatefulSets: (k) => k.listStatefulSets(ns),
      getSecret: (k) => k.getSecret(ns, 'x'),
      createSecret: (k) => k.createSecret(ns, { apiVersion: 'v1', kind: 'Secret', ...named }),
      replaceSecret: (k) => k.replaceSecret(ns, { apiVersion: 'v1', kind: 'Secret', ...named }),
      deleteSecret: (k) => k.deleteSecret(ns, 'x'),
      getPodDisruptionBudget: (k) => k.getPodDisruptionBudget(ns, 'x'),
      createPodDisruptionBudget: (k) =>
        k.createPodDisruptionBudget(ns, { apiVersion: 'policy/v1', kind: 'PodDisruptionBudget', ...named }),
      replacePodDisruptionBudget: (k) =>
        k.replacePodDisruptionBudget(ns, { apiVersion: 'policy/v1', kind: 'PodDisruptionBudget', ...named }),
      deletePodDisruptionBudget: (k) => k.deletePodDisruptionBudget(ns, 'x'),
      getJob: (k) => k.getJob(ns, 'x'),
      createJob: (k) => k.createJob(ns, { apiVersion: 'batch/v1', kind: 'Job', ...named }),
      replaceJob: (k) => k.replaceJob(ns, { apiVersion: 'batch/v1', kind: 'Job', ...named }),
      deleteJob: (k) => k.deleteJob(ns, 'x'),
      listJobs: (k) => k.listJobs(ns),
      annotateJob: (k) => k.annotateJob(ns, 'x', { a: 'b' }),
      listPods: (k) => k.listPods(ns),
      deletePod: (k) => k.deletePod(ns, 'x'),
      getPod: (k) => k.getPod(ns, 'x'),
      annotatePod: (k) => k.annotatePod(ns, 'x', { a: 'b' }),
      listEvents: (k) => k.listEvents(ns),
      getNamespace: (k) => k.getNamespace(ns),
      getServerVersion: (k) => k.getServerVersion(),
      // One stream of each watched kind, stopped once it is open: the report comes when it ends.
      watch: async (k) => {
        for (const resource of ['deployments', 'statefulsets', 'pods', 'jobs', 'events'] as const) {
          const w = k.watch(resource, ns, { timeoutSeconds: 5 }, () => undefined);
          await new Promise((resolve) => setTimeout(resolve, 100));
          w.stop();
          await w.done;
        }
      },
      getLease: (k) => k.getLease(ns, 'x'),
      createLease: (k) =>
        k.createLease(ns, { apiVersion: 'coordination.k8s.io/v1', kind: 'Lease', ...named }),
      replaceLease: (k) =>
        k.replaceLease(ns, { apiVersion: 'coordination.k8s.io/v1', kind: 'Lease', ...named }),
    };
    expect(Object.keys(exercise).sort()).toEqual([...methods].sort());
    const calls: KubeCallReport[] = [];
    const kube = new ClientNodeKubernetes(loadKubeConfig({ kubeconfigYaml: sim.kubeconfig() }), {
      onCall: (c) => calls.push(c),
    });
    const registry = new ResourceRegistry();
    const expected = new Set<string>();
    for (const m of used) {
      calls.length = 0;
      await exercise[m as keyof KubernetesPort](kube).catch(() => undefined);
      expect([m, calls.length > 0]).toEqual([m, true]);
      for (const c of calls) {
        // /version is no resource: every client may read it (the system:public-info-viewer ClusterRole).
        if (c.resource === 'version') continue;
        const group = registry.types.find((t) => t.plural === c.resource)?.group;
        expect([c.resource, group]).toEqual([c.resource, expect.any(String)]);
        expected.add(`${group ?? ''}/${c.resource}:${c.verb}`);
      }
    }

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
