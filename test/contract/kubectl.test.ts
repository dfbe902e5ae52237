/**
 * The real kubectl (Debian's kubernetes-client 1.20, from scripts/kubectl.sh) against the cluster:
 * discovery, server-side Table output, create/scale/rollout/label/annotate, client-side apply with OpenAPI
 * validation, deletion with garbage collection, logs, events and authentication, asserted on kubectl's
 * own output so that the same suite holds against a real cluster.
 */
import { execFile, execFileSync } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { VersionApi } from '@kubernetes/client-node';
import yaml from 'js-yaml';
import { type TestCluster, eventually, startTestCluster, useRealCluster } from './cluster.js';

const repo = resolve(dirname(fileURLToPath(import.meta.url)), '../..');

let bin: string;
let c: TestCluster;
let dir: string;
let kubeconfig: string;

beforeAll(async () => {
  // Synchronous is fine here: nothing in-process is serving yet. The first run downloads the package.
  bin = execFileSync(join(repo, 'scripts/kubectl.sh'), { encoding: 'utf8' }).trim();
  c = await startTestCluster('kubectl');
  dir = await mkdtemp(join(tmpdir(), 'kubectl-'));
  kubeconfig = c.kubeconfigFile;
}, 300_000);

afterAll(async () => {
  await c?.close();
  if (dir) await rm(dir, { recursive: true, force: true });
});

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs kubectl asynchronously: the simulator answers from this very process. */
function kubectl(args: string[], requestTimeout = '30s'): Promise<Run> {
  const argv = [
    '--kubeconfig',
    kubeconfig,
    // A cache of its own, so no discovery from another cluster on the same host:port is reused.
    '--cache-dir',
    join(dir, 'cache'),
    `--request-timeout=${requestTimeout}`,
    ...args,
  ];
  return new Promise((done) => {
    execFile(
      bin,
      argv,
      { env: { ...process.env, HOME: dir }, timeout: 120_000, maxBuffer: 16 << 20, encoding: 'utf8' },
      (err, stdout, stderr) => {
        done({ code: err ? (typeof err.code === 'number' ? err.code : -1) : 0, stdout, stderr });
      },
    );
  });
}

async function ok(args: string[], requestTimeout?: string): Promise<string> {
  const r = await kubectl(args, requestTimeout);
  if (r.code !== 0) throw new Error(`kubectl ${args.join(' ')} exited ${r.code}: ${r.stderr}`);
  return r.stdout;
}

const inNs = (...args: string[]): string[] => [...args, '-n', c.namespace];

/** kubectl's column output: tabwriter pads with at least three spaces, cells hold at most single ones. */
function table(out: string): { header: string[]; rows: string[][] } {
  const [head = '', ...lines] = out.trimEnd().split('\n');
  const cells = (l: string): string[] => l.trim().split(/\s{2,}/);
  return { header: cells(head), rows: lines.map(cells) };
}

async function writeManifest(name: string, doc: unknown): Promise<string> {
  const file = join(dir, name);
  await writeFile(file, yaml.dump(doc));
  return file;
}

it('kubectl version shows the server version', async () => {
  const { gitVersion } = await c.kc.makeApiClient(VersionApi).getCode();
  const out = await ok(['version']);
  expect(out).toContain('Server Version:');
  expect(out).toContain(`GitVersion:"${gitVersion}"`);
});

it('creates a deployment and reads it back as JSON', async () => {
  expect((await ok(inNs('create', 'deployment', 'web', '--image=nginx'))).trim()).toBe(
    'deployment.apps/web created',
  );
  const d = JSON.parse(await ok(inNs('get', 'deployment', 'web', '-o', 'json'))) as Record<string, unknown>;
  expect(d).toMatchObject({
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name: 'web', namespace: c.namespace, labels: { app: 'web' } },
    spec: {
      replicas: 1,
      selector: { matchLabels: { app: 'web' } },
      template: { spec: { containers: [{ name: 'nginx', image: 'nginx' }] } },
    },
  });
  expect((d['metadata'] as { uid: string }).uid).toMatch(/^[0-9a-f-]{36}$/);
});

it('get deployments -A lists it with its namespace', async () => {
  const t = table(await ok(['get', 'deployments', '-A']));
  expect(t.header).toEqual(['NAMESPACE', 'NAME', 'READY', 'UP-TO-DATE', 'AVAILABLE', 'AGE']);
  expect(t.rows.filter((r) => r[0] === c.namespace).map((r) => r[1])).toEqual(['web']);
});

it("get deployments prints the server's Table columns", async () => {
  // Without a Table answer kubectl 1.20 prints only NAME and AGE (what --server-print=false shows).
  const t = table(await ok(inNs('get', 'deployments')));
  expect(t.header).toEqual(['NAME', 'READY', 'UP-TO-DATE', 'AVAILABLE', 'AGE']);
  expect(t.rows).toHaveLength(1);
  expect(t.rows[0]?.[0]).toBe('web');
  expect(t.rows[0]?.[1]).toMatch(/^[01]\/1$/);
  const w = table(await ok(inNs('get', 'deployments', '-o', 'wide')));
  expect(w.header).toEqual([
    'NAME',
    'READY',
    'UP-TO-DATE',
    'AVAILABLE',
    'AGE',
    'CONTAINERS',
    'IMAGES',
    'SELECTOR',
  ]);
  expect(w.rows[0]?.slice(5)).toEqual(['nginx', 'nginx', 'app=web']);
});

it('scales the deployment and waits for the rollout', async () => {
  expect((await ok(inNs('scale', 'deployment', 'web', '--replicas=3'))).trim()).toBe(
    'deployment.apps/web scaled',
  );
  expect(await ok(inNs('get', 'deployment', 'web', '-o', 'jsonpath={.spec.replicas}'))).toBe('3');
  const out = await ok(inNs('rollout', 'status', 'deployment/web', '--timeout=60s'), '90s');
  expect(out).toContain('deployment "web" successfully rolled out');
}, 120_000);

it('get pods shows the three pods Running and ready', async () => {
  const t = table(await ok(inNs('get', 'pods')));
  expect(t.header).toEqual(['NAME', 'READY', 'STATUS', 'RESTARTS', 'AGE']);
  expect(t.rows).toHaveLength(3);
  for (const r of t.rows) {
    expect(r[0]).toMatch(/^web-/);
    expect(r.slice(1, 4)).toEqual(['1/1', 'Running', '0']);
  }
});

it('selects pods by label with -o name', async () => {
  const names = (await ok(inNs('get', 'pods', '-l', 'app=web', '-o', 'name'))).trim().split('\n');
  expect(names).toHaveLength(3);
  for (const n of names) expect(n).toMatch(/^pod\/web-[a-z0-9]+-[a-z0-9]{5}$/);
  expect(await ok(inNs('get', 'pods', '-l', 'app=nothing', '-o', 'name'))).toBe('');
});

it('labels and annotates', async () => {
  expect((await ok(inNs('label', 'deployment', 'web', 'tier=front'))).trim()).toBe(
    'deployment.apps/web labeled',
  );
  expect((await ok(inNs('annotate', 'deployment', 'web', 'note=hello'))).trim()).toBe(
    'deployment.apps/web annotated',
  );
  const d = JSON.parse(await ok(inNs('get', 'deployment', 'web', '-o', 'json'))) as {
    metadata: { labels: Record<string, string>; annotations: Record<string, string> };
  };
  expect(d.metadata.labels).toMatchObject({ app: 'web', tier: 'front' });
  expect(d.metadata.annotations).toMatchObject({ note: 'hello' });
  expect((await ok(inNs('get', 'deployments', '-l', 'tier=front', '-o', 'name'))).trim()).toBe(
    'deployment.apps/web',
  );
  const clash = await kubectl(inNs('label', 'deployment', 'web', 'tier=back'));
  expect(clash.code).not.toBe(0);
  expect(clash.stderr).toContain("'tier' already has a value (front)");
});

it('prints pod logs', async () => {
  const [pod = ''] = (await ok(inNs('get', 'pods', '-l', 'app=web', '-o', 'name'))).trim().split('\n');
  const r = await kubectl(inNs('logs', pod));
  if (useRealCluster && r.code !== 0) {
    // realk8s's fake kubelet serves no logs: the apiserver took the request and failed to reach the node.
    expect(r.stderr).toContain('containerLogs');
  } else {
    expect(r).toMatchObject({ code: 0, stderr: '' });
  }
  const missing = await kubectl(inNs('logs', 'no-such-pod'));
  expect(missing.code).not.toBe(0);
  expect(missing.stderr).toContain('pods "no-such-pod" not found');
});

it('get events shows what the controllers did', async () => {
  const t = await eventually(async () => {
    const tt = table(await ok(inNs('get', 'events')));
    const scaled = tt.rows.some((r) => r[2] === 'ScalingReplicaSet' && r[3] === 'deployment/web');
    const scheduled = tt.rows.some((r) => r[2] === 'Scheduled' && r[3]?.startsWith('pod/web-'));
    return scaled && scheduled && tt;
  }, 'ScalingReplicaSet and Scheduled events');
  expect(t.header).toEqual(['LAST SEEN', 'TYPE', 'REASON', 'OBJECT', 'MESSAGE']);
});

describe('apply', () => {
  // kubectl 1.20 validates `apply` and `create -f` against /openapi/v2 unless told --validate=false. The
  // simulator serves a real server's definitions for its kinds, so validation stays on here as against
  // a real cluster: valid manifests pass and unknown or mistyped fields are refused before any request.
  const configMap = (labels: Record<string, string>, data: Record<string, string>) => ({
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: { name: 'settings', labels },
    data,
  });

  it('creates, leaves unchanged and three-way merges a ConfigMap', async () => {
    const first = await writeManifest('cm1.yaml', configMap({ a: '1' }, { one: '1', two: '2' }));
    expect((await ok(inNs('apply', '-f', first))).trim()).toBe('configmap/settings created');
    expect((await ok(inNs('apply', '-f', first))).trim()).toBe('configmap/settings unchanged');
    // A change made by someone else, which apply must keep: it is not in last-applied-configuration.
    await ok(inNs('label', 'configmap', 'settings', 'owner=ops'));
    const second = await writeManifest('cm2.yaml', configMap({ b: '2' }, { one: 'uno', three: '3' }));
    expect((await ok(inNs('apply', '-f', second))).trim()).toBe('configmap/settings configured');
    const cm = JSON.parse(await ok(inNs('get', 'configmap', 'settings', '-o', 'json'))) as {
      data: Record<string, string>;
      metadata: { labels: Record<string, string>; annotations: Record<string, string> };
    };
    expect(cm.data).toEqual({ one: 'uno', three: '3' });
    expect(cm.metadata.labels).toEqual({ b: '2', owner: 'ops' });
    const lastApplied = cm.metadata.annotations['kubectl.kubernetes.io/last-applied-configuration'] ?? '{}';
    expect(JSON.parse(lastApplied)).toMatchObject({
      kind: 'ConfigMap',
      data: { one: 'uno', three: '3' },
      metadata: { name: 'settings', labels: { b: '2' } },
    });
  });

  it('merges a Deployment container list by name', async () => {
    const dep = (image: string, env: { name: string; value: string }[]) => ({
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      metadata: { name: 'applied' },
      spec: {
        replicas: 0,
        selector: { matchLabels: { app: 'applied' } },
        template: {
          metadata: { labels: { app: 'applied' } },
          spec: { containers: [{ name: 'app', image, env, ports: [{ containerPort: 8080 }] }] },
        },
      },
    });
    const v1 = await writeManifest('dep1.yaml', dep('registry.example/app:1', [{ name: 'A', value: '1' }]));
    expect((await ok(inNs('apply', '-f', v1))).trim()).toBe('deployment.apps/applied created');
    const v2 = await writeManifest('dep2.yaml', dep('registry.example/app:2', [{ name: 'B', value: '2' }]));
    const dry = await ok(inNs('apply', '--dry-run=server', '-f', v2));
    expect(dry.trim()).toBe('deployment.apps/applied configured (server dry run)');
    expect(
      await ok(
        inNs('get', 'deployment', 'applied', '-o', 'jsonpath={.spec.template.spec.containers[0].image}'),
      ),
    ).toBe('registry.example/app:1');
    expect((await ok(inNs('apply', '-f', v2))).trim()).toBe('deployment.apps/applied configured');
    const d = JSON.parse(await ok(inNs('get', 'deployment', 'applied', '-o', 'json'))) as {
      spec: { template: { spec: { containers: Record<string, unknown>[] } } };
    };
    expect(d.spec.template.spec.containers).toHaveLength(1);
    expect(d.spec.template.spec.containers[0]).toMatchObject({
      name: 'app',
      image: 'registry.example/app:2',
      env: [{ name: 'B', value: '2' }],
      ports: [{ containerPort: 8080, protocol: 'TCP' }],
    });
  });

  it('refuses manifests with unknown or mistyped fields before sending them', async () => {
    const unknown = await writeManifest('bad.yaml', {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name: 'bad', bogus: 1 },
      data: { a: 'b' },
    });
    for (const verb of ['apply', 'create']) {
      const r = await kubectl(inNs(verb, '-f', unknown));
      expect(r.code).not.toBe(0);
      expect(r.stderr).toContain('unknown field "bogus" in io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta');
    }
    const mistyped = await writeManifest('bad-dep.yaml', {
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      metadata: { name: 'bad' },
      spec: { replicas: 'three', selector: { matchLabels: { a: 'b' } }, template: {} },
    });
    const r = await kubectl(inNs('apply', '-f', mistyped));
    expect(r.code).not.toBe(0);
    expect(r.stderr).toContain('invalid type for io.k8s.api.apps.v1.DeploymentSpec.replicas');
    const gone = await kubectl(inNs('get', 'configmap', 'bad'));
    expect(gone.stderr).toContain('configmaps "bad" not found');
  });
});

it('deletes the deployment, and its pods go away', async () => {
  expect((await ok(inNs('delete', 'deployment', 'web'))).trim()).toBe('deployment.apps "web" deleted');
  await eventually(
    async () => (await ok(inNs('get', 'pods', '-l', 'app=web', '-o', 'name'))) === '',
    'the pods of web to be deleted',
    90_000,
  );
}, 120_000);

it('get ns lists the namespaces as Active', async () => {
  const t = table(await ok(['get', 'ns']));
  expect(t.header).toEqual(['NAME', 'STATUS', 'AGE']);
  expect(t.rows.find((r) => r[0] === c.namespace)?.[1]).toBe('Active');
  expect(t.rows.find((r) => r[0] === 'default')?.[1]).toBe('Active');
});

it('fails with Unauthorized for an unknown token', async () => {
  const r = await kubectl(['--token=not-a-valid-token', ...inNs('get', 'pods')]);
  expect(r.code).not.toBe(0);
  expect(r.stderr).toMatch(/You must be logged in to the server|Unauthorized/);
});
