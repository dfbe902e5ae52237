/**
 * The client-node adapter against the simulated cluster over real HTTP: every port method, the
 * 404/409 conventions, paging, Job deletion with its pods, and how failures are classified.
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  AlreadyExistsError,
  ClientNodeKubernetes,
  ConflictError,
  KubeApiError,
  type KubeCallReport,
  loadKubeConfig,
} from '@opi/kube';
import type { Deployment, Job, PodDisruptionBudget, StatefulSet } from '@opi/kube-objects';
import { FAST_BEHAVIOUR, type Simulator, startSimulator } from '@opi/kube-sim';
import { eventually } from '../../support/eventually.js';

const NS = 'kube-adapter';
const OTHER_NS = 'kube-adapter-other';

let sim: Simulator;
let dir: string;
let kube: ClientNodeKubernetes;
let calls: KubeCallReport[];

beforeAll(async () => {
  sim = await startSimulator({ seed: 7, behaviour: FAST_BEHAVIOUR, namespaces: [NS, OTHER_NS] });
  dir = await mkdtemp(join(tmpdir(), 'kube-adapter-'));
  const file = join(dir, 'kubeconfig');
  await sim.writeKubeconfig(file);
  calls = [];
  kube = new ClientNodeKubernetes(loadKubeConfig({ kubeconfigFile: file }), {
    requestTimeoutMs: 1000,
    onCall: (c) => calls.push(c),
  });
});

afterAll(async () => {
  kube.close();
  await sim.close();
  await rm(dir, { recursive: true, force: true });
});

afterEach(() => {
  sim.faults.reset();
});

function deployment(name: string, labels: Record<string, string> = {}, replicas = 1): Deployment {
  return {
    metadata: { name, labels: { app: name, ...labels } },
    spec: {
      replicas,
      selector: { matchLabels: { app: name } },
      template: {
        metadata: { labels: { app: name } },
        spec: {
          containers: [
            {
              name: 'app',
              image: 'registry.example/app:1',
              resources: { requests: { memory: '64Mi', cpu: '10m' } },
            },
          ],
        },
      },
    },
  };
}

function job(name: string): Job {
  return {
    metadata: { name },
    spec: {
      backoffLimit: 0,
      template: {
        metadata: { labels: { task: name } },
        spec: {
          restartPolicy: 'Never',
          containers: [
            {
              name: 'task',
              image: 'registry.example/task:1',
              // Long-running, so its pods are still there when the Job is deleted.
              env: [{ name: 'KUBESIM_RUN_MS', value: '60000' }],
              resources: { requests: { memory: '64Mi', cpu: '10m' } },
            },
          ],
        },
      },
    },
  };
}

async function rejection(p: Promise<unknown>): Promise<KubeApiError> {
  try {
    await p;
  } catch (e) {
    if (e instanceof KubeApiError) return e;
    throw e;
  }
  throw new Error('expected the call to fail');
}

describe('ClientNodeKubernetes: Deployments', () => {
  it('creates, reads, replaces, conflicts on a stale resourceVersion, and deletes twice', async () => {
    expect(await kube.deployments.get(NS, 'web')).toBeUndefined();
    const created = await kube.deployments.create(NS, deployment('web'));
    expect(created.metadata).toMatchObject({ name: 'web', namespace: NS });
    expect(created.metadata.uid).toBeTruthy();
    // Wire JSON, not client-node's models: timestamps stay strings.
    expect(typeof created.metadata.creationTimestamp).toBe('string');

    const read = await kube.deployments.get(NS, 'web');
    expect(read?.metadata.uid).toBe(created.metadata.uid);

    const replaced = await kube.deployments.replace(NS, {
      ...deployment('web', {}, 2),
      metadata: { ...deployment('web').metadata, resourceVersion: read!.metadata.resourceVersion },
    });
    expect(replaced.spec?.replicas).toBe(2);
    expect(Number(replaced.metadata.resourceVersion)).toBeGreaterThan(Number(read!.metadata.resourceVersion));

    const stale = await rejection(
      kube.deployments.replace(NS, {
        ...deployment('web', {}, 3),
        metadata: { ...deployment('web').metadata, resourceVersion: read!.metadata.resourceVersion },
      }),
    );
    expect(stale).toBeInstanceOf(ConflictError);
    expect(stale).toMatchObject({ status: 409, reason: 'Conflict', transient: true });
    expect(stale.message).toContain('the object has been modified');

    const again = await rejection(kube.deployments.create(NS, deployment('web')));
    expect(again).toBeInstanceOf(AlreadyExistsError);
    expect(again).toMatchObject({ status: 409, transient: false });

    expect(await kube.deployments.delete(NS, 'web')).toBe('deleted');
    expect(await kube.deployments.delete(NS, 'web')).toBe('absent');
    expect(await kube.deployments.get(NS, 'web')).toBeUndefined();
  });

  it('lists page by page, in a namespace and across all, by label', async () => {
    for (let i = 0; i < 5; i++) await kube.deployments.create(NS, deployment(`paged-${i}`, { batch: 'p' }));
    await kube.deployments.create(OTHER_NS, deployment('paged-other', { batch: 'p' }));
    await kube.deployments.create(NS, deployment('unpaged', { batch: 'q' }));

    calls.length = 0;
    const list = await kube.deployments.list(NS, 'batch=p', 2);
    expect(list.items.map((d) => d.metadata.name).sort()).toEqual([
      'paged-0',
      'paged-1',
      'paged-2',
      'paged-3',
      'paged-4',
    ]);
    expect(list.resourceVersion).toMatch(/^\d+$/);
    // 5 objects, 2 per page: three requests.
    expect(calls.filter((c) => c.verb === 'list' && c.resource === 'deployments')).toHaveLength(3);
    expect(calls.every((c) => c.status === 200)).toBe(true);

    const all = await kube.deployments.list(undefined, 'batch=p', 2);
    expect(all.items).toHaveLength(6);
    expect(all.items.filter((d) => d.metadata.namespace === OTHER_NS)).toHaveLength(1);
  });
});

describe('ClientNodeKubernetes: StatefulSets', () => {
  const statefulSet = (name: string, replicas: number, labels: Record<string, string> = {}): StatefulSet => {
    const d = deployment(name, labels, replicas);
    return { metadata: d.metadata, spec: { ...d.spec!, serviceName: '', podManagementPolicy: 'Parallel' } };
  };

  it('creates, reads, replaces, conflicts on a stale resourceVersion, lists by label and deletes twice', async () => {
    expect(await kube.statefulsets.get(NS, 'ordered')).toBeUndefined();
    const created = await kube.statefulsets.create(NS, statefulSet('ordered', 2, { mode: 'sts' }));
    expect(created.metadata).toMatchObject({ name: 'ordered', namespace: NS });
    // Its pods carry their ordinal, as Kubernetes 1.28 and later set it.
    await eventually(async () => {
      const pods = await kube.pods.list(NS, 'app=ordered');
      return (
        pods.items
          .map((p) => p.metadata.labels?.['apps.kubernetes.io/pod-index'])
          .sort()
          .join() === '0,1'
      );
    }, 'pods ordered-0 and ordered-1 with their index');

    const read = await kube.statefulsets.get(NS, 'ordered');
    const replaced = await kube.statefulsets.replace(NS, {
      ...statefulSet('ordered', 3, { mode: 'sts' }),
      metadata: {
        ...statefulSet('ordered', 3, { mode: 'sts' }).metadata,
        resourceVersion: read!.metadata.resourceVersion,
      },
    });
    expect(replaced.spec?.replicas).toBe(3);
    const stale = await rejection(
      kube.statefulsets.replace(NS, {
        ...statefulSet('ordered', 1),
        metadata: { ...statefulSet('ordered', 1).metadata, resourceVersion: read!.metadata.resourceVersion },
      }),
    );
    expect(stale).toBeInstanceOf(ConflictError);
    expect(await rejection(kube.statefulsets.create(NS, statefulSet('ordered', 1)))).toBeInstanceOf(
      AlreadyExistsError,
    );

    expect((await kube.statefulsets.list(NS, 'mode=sts')).items.map((s) => s.metadata.name)).toEqual([
      'ordered',
    ]);
    expect((await kube.statefulsets.list(undefined, 'mode=sts', 1)).items).toHaveLength(1);

    expect(await kube.statefulsets.delete(NS, 'ordered')).toBe('deleted');
    expect(await kube.statefulsets.delete(NS, 'ordered')).toBe('absent');
    expect(await kube.statefulsets.get(NS, 'ordered')).toBeUndefined();
  });
});

describe('ClientNodeKubernetes: Secrets and PodDisruptionBudgets', () => {
  it('round-trips a Secret', async () => {
    const s = await kube.secrets.create(NS, {
      metadata: { name: 'creds' },
      stringData: { password: 'hunter2' },
    });
    expect(s.data?.['password']).toBe(Buffer.from('hunter2').toString('base64'));
    expect((await kube.secrets.get(NS, 'creds'))?.metadata.uid).toBe(s.metadata.uid);
    const r = await kube.secrets.replace(NS, {
      ...s,
      data: { password: Buffer.from('x').toString('base64') },
    });
    expect(r.data?.['password']).toBe('eA==');
    expect(await rejection(kube.secrets.create(NS, { metadata: { name: 'creds' } }))).toBeInstanceOf(
      AlreadyExistsError,
    );
    expect(await kube.secrets.delete(NS, 'creds')).toBe('deleted');
    expect(await kube.secrets.delete(NS, 'creds')).toBe('absent');
    expect(await kube.secrets.get(NS, 'creds')).toBeUndefined();
  });

  it('creates, reads and deletes a policy/v1 PodDisruptionBudget (never replaced)', async () => {
    const body: PodDisruptionBudget = {
      metadata: { name: 'web-pdb' },
      spec: { minAvailable: 1, selector: { matchLabels: { app: 'web' } } },
    };
    const p = await kube.poddisruptionbudgets.create(NS, body);
    expect(p.spec?.minAvailable).toBe(1);
    expect((await kube.poddisruptionbudgets.get(NS, 'web-pdb'))?.spec?.minAvailable).toBe(1);
    expect(await kube.poddisruptionbudgets.delete(NS, 'web-pdb')).toBe('deleted');
    expect(await kube.poddisruptionbudgets.delete(NS, 'web-pdb')).toBe('absent');
  });
});

describe('ClientNodeKubernetes: Jobs, Pods, Events, Namespaces', () => {
  it("answers with the server's JSON, not client-node's models (which hold timestamps as Dates)", async () => {
    await kube.jobs.create(NS, job('wire-1'));
    const listed = await eventually(
      async () => (await kube.pods.list(NS, 'task=wire-1')).items[0],
      'the Job pod',
    );
    const pod = await kube.pods.get(NS, listed.metadata.name);
    const created = await kube.jobs.get(NS, 'wire-1');
    for (const o of [listed, pod, created]) {
      expect(typeof o?.metadata.creationTimestamp).toBe('string');
    }
    expect(pod).toEqual(expect.objectContaining({ apiVersion: 'v1', kind: 'Pod' }));
    // An error still carries the server's Status (client-node reads the body of a non-2xx).
    const e = await kube.jobs.create(NS, job('wire-1')).catch((x: unknown) => x);
    expect(e).toBeInstanceOf(AlreadyExistsError);
    expect((e as Error).message).toContain('wire-1');
    expect(await kube.jobs.delete(NS, 'wire-1')).toBe('deleted');
  });

  it('deletes a Job together with its pods, and a pod on its own', async () => {
    const j = await kube.jobs.create(NS, job('task-1'));
    expect(j.spec?.selector).toBeDefined();
    expect((await kube.jobs.get(NS, 'task-1'))?.metadata.uid).toBe(j.metadata.uid);
    const pods = await eventually(async () => {
      const l = await kube.pods.list(NS, 'task=task-1');
      return l.items.length > 0 && l.items;
    }, 'the Job pod');
    const pod = pods[0]!;

    // Events of that pod, by field selector.
    const events = await eventually(async () => {
      const l = await kube.events.list(NS, `involvedObject.name=${pod.metadata.name}`);
      return l.items.length > 0 && l;
    }, 'events of the pod');
    expect(events.items.every((e) => e.involvedObject.name === pod.metadata.name)).toBe(true);
    // Across namespaces, one event per page: every page followed.
    calls.length = 0;
    const across = await kube.events.list(undefined, `involvedObject.name=${pod.metadata.name}`, 1);
    expect(across.items.length).toBeGreaterThanOrEqual(events.items.length);
    expect(across.items.every((e) => e.involvedObject.name === pod.metadata.name)).toBe(true);
    expect(calls.filter((c) => c.resource === 'events').length).toBeGreaterThanOrEqual(across.items.length);

    expect(await kube.jobs.delete(NS, 'task-1')).toBe('deleted');
    expect(await kube.jobs.delete(NS, 'task-1')).toBe('absent');
    // Background propagation: without it a batch/v1 Job's pods would be orphaned and stay.
    await eventually(
      async () => (await kube.pods.list(NS, 'task=task-1')).items.length === 0,
      'the pods to go',
    );

    await kube.jobs.create(NS, job('task-2'));
    const p2 = await eventually(
      async () => (await kube.pods.list(undefined, 'task=task-2')).items[0],
      'pod 2',
    );
    expect(await kube.pods.delete(NS, p2.metadata.name)).toBe('deleted');
    await eventually(
      async () => (await kube.pods.delete(NS, p2.metadata.name)) === 'absent',
      'the pod to be gone after its grace period',
    );
    await kube.jobs.delete(NS, 'task-2');
  });

  it('lists Jobs by label and annotates Jobs and pods with merge patches', async () => {
    const j = await kube.jobs.create(NS, {
      ...job('annotated'),
      metadata: { name: 'annotated', labels: { kind: 'annotated' } },
    });
    const jobs = await kube.jobs.list(undefined, 'kind=annotated');
    expect(jobs.items.map((x) => x.metadata.name)).toEqual(['annotated']);
    expect(await kube.jobs.annotate(NS, 'annotated', { 'example.com/reported': 'yes' })).toBe('patched');
    const read = await kube.jobs.get(NS, 'annotated');
    expect(read?.metadata.annotations?.['example.com/reported']).toBe('yes');
    expect(read?.metadata.uid).toBe(j.metadata.uid);
    expect(await kube.jobs.annotate(NS, 'annotated', { 'example.com/reported': null })).toBe('patched');
    expect(
      (await kube.jobs.get(NS, 'annotated'))?.metadata.annotations?.['example.com/reported'],
    ).toBeUndefined();
    expect(await kube.jobs.annotate(NS, 'no-such-job', { a: 'b' })).toBe('absent');
    const pod = await eventually(
      async () => (await kube.pods.list(NS, 'job-name=annotated')).items[0],
      'the Job pod',
    );
    expect(await kube.pods.annotate(NS, pod.metadata.name, { 'example.com/crashes': '2' })).toBe('patched');
    const pods = await kube.pods.list(NS, 'job-name=annotated');
    expect(pods.items[0]?.metadata.annotations?.['example.com/crashes']).toBe('2');
    expect(await kube.pods.annotate(NS, 'no-such-pod', { a: 'b' })).toBe('absent');
  });

  it('reads namespaces', async () => {
    expect((await kube.getNamespace(NS))?.metadata.name).toBe(NS);
    expect(await kube.getNamespace('no-such-namespace')).toBeUndefined();
  });

  it("reads the server's version", async () => {
    const v = await kube.getServerVersion();
    expect(v).toEqual({
      major: '1',
      minor: expect.stringMatching(/^\d+/),
      gitVersion: expect.stringMatching(/^v1\./),
    });
  });
});

describe('ClientNodeKubernetes: connections', () => {
  it('reuses kept-alive TLS connections instead of a handshake per request', async () => {
    const before = sim.connectionsAccepted.tls;
    // Sequential calls: one connection does them all (client-node alone would open 40).
    for (let i = 0; i < 40; i++) await kube.getNamespace(NS);
    // 10 at once: at most 10 more connections, then reused for the next rounds.
    for (let round = 0; round < 4; round++) {
      await Promise.all(Array.from({ length: 10 }, () => kube.getNamespace(NS)));
    }
    expect(sim.connectionsAccepted.tls - before).toBeLessThanOrEqual(11);
  });
});

describe('ClientNodeKubernetes: failures', () => {
  it('classifies injected 503s as transient, with Retry-After', async () => {
    sim.faults.set({ errorRate: 1, errorCodes: [503], retryAfterSeconds: 4 });
    calls.length = 0;
    const e = await rejection(kube.deployments.get(NS, 'anything'));
    expect(e).toMatchObject({
      status: 503,
      reason: 'ServiceUnavailable',
      transient: true,
      retryAfterSeconds: 4,
    });
    expect(e.operation).toBe(`get deployments ${NS}/anything`);
    expect(calls).toEqual([expect.objectContaining({ verb: 'get', resource: 'deployments', status: 503 })]);
    // get/delete treat only 404 as absent; a 503 is not "gone".
    expect(await rejection(kube.secrets.delete(NS, 'x'))).toMatchObject({ status: 503, transient: true });
  });

  it('classifies 429 as transient', async () => {
    sim.faults.set({ errorRate: 1, errorCodes: [429], retryAfterSeconds: 2 });
    expect(await rejection(kube.pods.list(NS))).toMatchObject({
      status: 429,
      transient: true,
      retryAfterSeconds: 2,
    });
  });

  it('classifies an invalid object as a permanent 422 with the Status message', async () => {
    const e = await rejection(kube.deployments.create(NS, deployment('Bad_Name')));
    expect(e).toMatchObject({ status: 422, reason: 'Invalid', transient: false });
    expect(e.message).toContain('Bad_Name');
    expect(e).not.toBeInstanceOf(AlreadyExistsError);
  });

  it('classifies a replace of a missing object as a permanent 404', async () => {
    expect(await rejection(kube.secrets.replace(NS, { metadata: { name: 'never-created' } }))).toMatchObject({
      status: 404,
      reason: 'NotFound',
      transient: false,
    });
  });

  it('classifies a dropped connection as transient', async () => {
    sim.faults.set({ dropRate: 1 });
    calls.length = 0;
    const e = await rejection(kube.secrets.get(NS, 'x'));
    expect(e).toMatchObject({ status: undefined, transient: true });
    expect(e.reason).toMatch(/ConnectionReset|NetworkError/);
    expect(calls).toEqual([expect.objectContaining({ verb: 'get', resource: 'secrets', status: 'error' })]);
  });

  it('times out a request slower than requestTimeoutMs, as transient', async () => {
    sim.faults.set({ latencyMs: 2500 });
    const e = await rejection(kube.deployments.list(NS));
    expect(e).toMatchObject({ status: undefined, reason: 'Timeout', transient: true });
    expect(e.message).toBe('no answer within 1000 ms');
    sim.faults.reset();
    await kube.deployments.list(NS);
  });

  it('classifies a refused connection as transient', async () => {
    const yaml = sim.kubeconfig().replace(/127\.0\.0\.1:\d+/, '127.0.0.1:1');
    const dead = new ClientNodeKubernetes(loadKubeConfig({ kubeconfigYaml: yaml }));
    expect(await rejection(dead.getNamespace(NS))).toMatchObject({
      status: undefined,
      reason: 'ConnectionRefused',
      transient: true,
    });
  });

  it('keeps at most maxConcurrentRequests in flight', async () => {
    // A server that counts the requests it holds at once; each answer waits a little so calls overlap.
    let inFlight = 0;
    let most = 0;
    const server = createServer((_req, res) => {
      inFlight++;
      most = Math.max(most, inFlight);
      setTimeout(() => {
        inFlight--;
        res.writeHead(200, { 'Content-Type': 'application/json' });
        res.end(
          JSON.stringify({
            apiVersion: 'v1',
            kind: 'Namespace',
            metadata: { name: NS, uid: 'u', resourceVersion: '1', creationTimestamp: '2020-01-01T00:00:00Z' },
          }),
        );
      }, 50);
    });
    await new Promise<void>((resolve) =>
      server.listen(0, '127.0.0.1', () => {
        resolve();
      }),
    );
    const port = (server.address() as AddressInfo).port;
    const yaml = sim.kubeconfig().replace(/https?:\/\/127\.0\.0\.1:\d+/, `http://127.0.0.1:${port}`);
    const limited = new ClientNodeKubernetes(loadKubeConfig({ kubeconfigYaml: yaml }), {
      maxConcurrentRequests: 3,
    });
    const results = await Promise.all(Array.from({ length: 12 }, () => limited.getNamespace(NS)));
    await new Promise<void>((resolve) =>
      server.close(() => {
        resolve();
      }),
    );
    expect(results.every((n) => n?.metadata.name === NS)).toBe(true);
    expect(most).toBe(3);
  });
});
