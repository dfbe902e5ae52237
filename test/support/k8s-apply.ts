/**
 * k8s/ applied with Debian's kubectl 1.20 (scripts/kubectl.sh) to a simulated cluster of its own, and the
 * object shapes the manifests' tests read back. useAppliedK8s() registers the beforeAll/afterAll.
 */
import { execFile, execFileSync } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll } from '@jest/globals';
import { FAST_BEHAVIOUR, type Simulator, startSimulator } from '@opi/kube-sim';
import { repo } from './repo-files.js';

export interface Meta {
  name: string;
  namespace?: string;
  labels?: Record<string, string>;
}
export interface K8sObject {
  apiVersion: string;
  kind: string;
  metadata: Meta;
  [key: string]: unknown;
}
export interface Probe {
  httpGet?: { path: string; port: string | number };
  exec?: { command: string[] };
}
export interface Container {
  name: string;
  image: string;
  command?: string[];
  args?: string[];
  env?: { name: string }[];
  envFrom?: { configMapRef?: { name: string }; secretRef?: { name: string } }[];
  ports?: { name?: string; containerPort: number }[];
  livenessProbe?: Probe;
  readinessProbe?: Probe;
  startupProbe?: Probe;
  resources?: { requests?: Record<string, string>; limits?: Record<string, string> };
  securityContext?: {
    allowPrivilegeEscalation?: boolean;
    readOnlyRootFilesystem?: boolean;
    runAsNonRoot?: boolean;
    capabilities?: { drop?: string[] };
  };
}
export interface PodSpec {
  serviceAccountName?: string;
  automountServiceAccountToken?: boolean;
  securityContext?: { runAsNonRoot?: boolean; runAsUser?: number };
  containers: Container[];
}
export interface Workload extends K8sObject {
  spec: {
    replicas?: number;
    template: { spec: PodSpec };
    volumeClaimTemplates?: { metadata: { name: string } }[];
  };
}
export interface Rule {
  apiGroups: string[];
  resources: string[];
  verbs: string[];
  resourceNames?: string[];
  nonResourceURLs?: string[];
}

export const container = (w: Workload, name: string): Container => {
  const c = w.spec.template.spec.containers.find((x) => x.name === name);
  if (!c) throw new Error(`no container ${name} in ${w.metadata.name}`);
  return c;
};
export const portOf = (c: Container, port: string | number | undefined): number | undefined =>
  typeof port === 'number' ? port : c.ports?.find((p) => p.name === port)?.containerPort;

export interface AppliedK8s {
  sim: Simulator;
  /** What the first `kubectl apply -k k8s/` printed. */
  applied: string;
  /** The data of the ConfigMap opi-config. */
  config: Record<string, string>;
  /** kubectl with these arguments; throws unless it exits 0. */
  ok: (args: string[]) => Promise<string>;
  get: <T = K8sObject>(kind: string, name: string, namespace: string) => Promise<T>;
}

/** k8s/ applied once in a beforeAll; the fields are set once it has run, the methods work from then on. */
export function useAppliedK8s(): AppliedK8s {
  let bin: string;
  let dir: string;
  let kubeconfig: string;

  function kubectl(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
    const argv = [
      '--kubeconfig',
      kubeconfig,
      '--cache-dir',
      join(dir, 'cache'),
      '--request-timeout=30s',
      ...args,
    ];
    return new Promise((done) => {
      execFile(
        bin,
        argv,
        { cwd: repo, env: { ...process.env, HOME: dir }, timeout: 120_000, maxBuffer: 16 << 20 },
        (err, stdout, stderr) => {
          done({ code: err ? (typeof err.code === 'number' ? err.code : -1) : 0, stdout, stderr });
        },
      );
    });
  }
  async function ok(args: string[]): Promise<string> {
    const r = await kubectl(args);
    if (r.code !== 0) throw new Error(`kubectl ${args.join(' ')} exited ${r.code}: ${r.stderr}`);
    return r.stdout;
  }
  async function get<T = K8sObject>(kind: string, name: string, namespace: string): Promise<T> {
    return JSON.parse(await ok(['get', kind, name, '-n', namespace, '-o', 'json'])) as T;
  }
  const k8s = { ok, get } as AppliedK8s;

  beforeAll(async () => {
    // Synchronous is fine: nothing in-process serves yet. The first run downloads the package.
    bin = execFileSync(join(repo, 'scripts/kubectl.sh'), { encoding: 'utf8' }).trim();
    const sim = await startSimulator({ behaviour: FAST_BEHAVIOUR, seed: 11 });
    k8s.sim = sim;
    dir = await mkdtemp(join(tmpdir(), 'opi-k8s-'));
    kubeconfig = join(dir, 'kubeconfig');
    await sim.writeKubeconfig(kubeconfig);
    k8s.applied = await ok(['apply', '-k', 'k8s/']);
    k8s.config = (
      await get<K8sObject & { data: Record<string, string> }>('configmap', 'opi-config', 'opi-system')
    ).data;
  }, 300_000);

  afterAll(async () => {
    await (k8s.sim as Simulator | undefined)?.close();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  return k8s;
}
