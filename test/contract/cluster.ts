/**
 * The cluster a contract test talks to: the simulator (default), or the cluster of the kubeconfig named
 * by KUBECONFIG when CONTRACT_USE_KUBECONFIG=1 (`npm run test:contract` sets it when KUBECONFIG is set),
 * so `npm test` never touches a real cluster by accident. Tests reach either only through client-node.
 */
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  AppsV1Api,
  BatchV1Api,
  CoreV1Api,
  KubeConfig,
  PolicyV1Api,
  CoordinationV1Api,
} from '@kubernetes/client-node';
import { FAST_BEHAVIOUR, type Simulator, startSimulator } from '@opi/kube-sim';
import { eventually as poll } from '../support/eventually.js';

export interface TestCluster {
  kc: KubeConfig;
  core: CoreV1Api;
  apps: AppsV1Api;
  batch: BatchV1Api;
  policy: PolicyV1Api;
  coordination: CoordinationV1Api;
  /** The simulator when the suite runs against it; undefined against a real cluster. */
  sim: Simulator | undefined;
  kubeconfigFile: string;
  /** A namespace of this test file's own, removed at the end. */
  namespace: string;
  close(): Promise<void>;
}

export const useRealCluster = process.env['CONTRACT_USE_KUBECONFIG'] === '1' && !!process.env['KUBECONFIG'];

/** `describe` for cases that only the simulator can run (fault injection, failure conventions). */
export const describeSimOnly: jest.Describe = useRealCluster ? describe.skip : describe;

if (useRealCluster) {
  process.stdout.write(
    `contract suite against the cluster of ${process.env['KUBECONFIG'] ?? ''}; simulator-only cases (faults, failure modes) are skipped\n`,
  );
}

export async function startTestCluster(
  prefix: string,
  options: { controllers?: boolean } = {},
): Promise<TestCluster> {
  const dir = await mkdtemp(join(tmpdir(), 'contract-'));
  const kubeconfigFile = join(dir, 'kubeconfig');
  let sim: Simulator | undefined;
  const kc = new KubeConfig();
  if (useRealCluster) {
    kc.loadFromFile(process.env['KUBECONFIG'] ?? '');
  } else {
    sim = await startSimulator({
      seed: 42,
      behaviour: FAST_BEHAVIOUR,
      watchTimeoutSeconds: 600,
      controllers: options.controllers ?? true,
    });
    await sim.writeKubeconfig(kubeconfigFile);
    kc.loadFromFile(kubeconfigFile);
  }
  const core = kc.makeApiClient(CoreV1Api);
  const namespace = `${prefix}-${randomBytes(3).toString('hex')}`;
  await core.createNamespace({ body: { metadata: { name: namespace } } });
  return {
    kc,
    core,
    apps: kc.makeApiClient(AppsV1Api),
    batch: kc.makeApiClient(BatchV1Api),
    policy: kc.makeApiClient(PolicyV1Api),
    coordination: kc.makeApiClient(CoordinationV1Api),
    sim,
    kubeconfigFile: useRealCluster ? (process.env['KUBECONFIG'] ?? '') : kubeconfigFile,
    namespace,
    close: async () => {
      await core.deleteNamespace({ name: namespace }).catch(() => undefined);
      await sim?.close();
      await rm(dir, { recursive: true, force: true });
    },
  };
}

/** Polls until `check` returns a value; this suite's default deadline is 20_000 ms. */
export function eventually<T>(
  check: () => Promise<T | undefined | false>,
  what: string,
  timeoutMs = 20_000,
): Promise<T> {
  return poll(check, what, timeoutMs);
}

/** The parsed Status body of a failed client-node call. */
export function statusOf(e: unknown): {
  code: number;
  reason?: string;
  message?: string;
  details?: Record<string, unknown>;
} {
  const err = e as { code?: number; body?: unknown };
  let body: Record<string, unknown> = {};
  if (typeof err.body === 'string') {
    try {
      body = JSON.parse(err.body) as Record<string, unknown>;
    } catch {
      body = {};
    }
  }
  return { code: err.code ?? 0, ...body };
}

export async function expectStatus(
  p: Promise<unknown>,
  code: number,
  reason?: string,
): Promise<ReturnType<typeof statusOf>> {
  try {
    await p;
  } catch (e) {
    const s = statusOf(e);
    expect(s.code).toBe(code);
    if (reason) expect(s.reason).toBe(reason);
    return s;
  }
  throw new Error(`expected a ${code} failure, but the call succeeded`);
}

export function deploymentBody(
  name: string,
  replicas = 1,
  image = 'registry.example/app:1',
  env: { name: string; value: string }[] = [],
) {
  return {
    metadata: { name, labels: { app: name } },
    spec: {
      replicas,
      selector: { matchLabels: { app: name } },
      template: {
        metadata: { labels: { app: name } },
        spec: {
          containers: [{ name: 'app', image, env, resources: { requests: { memory: '64Mi', cpu: '10m' } } }],
        },
      },
    },
  };
}
