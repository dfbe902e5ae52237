/** CRUD, errors, selectors, pagination, patch types, subresources, validation and auth, via client-node. */
import {
  ApiException,
  KubeConfig,
  CoreV1Api,
  PatchStrategy,
  setHeaderOptions,
  type V1ConfigMap,
} from '@kubernetes/client-node';
import {
  type TestCluster,
  deploymentBody,
  expectStatus,
  startTestCluster,
  useRealCluster,
} from './cluster.js';

let c: TestCluster;
beforeAll(async () => {
  c = await startTestCluster('crud', { controllers: false });
});
afterAll(async () => {
  await c.close();
});

const cm = (
  name: string,
  labels: Record<string, string> = {},
  data: Record<string, string> = { k: 'v' },
): V1ConfigMap => ({
  metadata: { name, labels },
  data,
});

describe('discovery', () => {
  it('serves the core and group resource lists', async () => {
    const core = await c.core.getAPIResources();
    expect(core.resources.map((r) => r.name)).toEqual(
      expect.arrayContaining(['pods', 'pods/status', 'pods/log', 'secrets', 'events', 'namespaces']),
    );
    const apps = await c.apps.getAPIResources();
    const deployments = apps.resources.find((r) => r.name === 'deployments');
    expect(deployments).toMatchObject({ namespaced: true, kind: 'Deployment', shortNames: ['deploy'] });
    expect(apps.resources.map((r) => r.name)).toEqual(
      expect.arrayContaining(['deployments/scale', 'statefulsets/status', 'replicasets']),
    );
    const batch = await c.batch.getAPIResources();
    expect(batch.resources.map((r) => r.name)).toContain('jobs');
  });
});

describe('create, get, replace, delete', () => {
  it('creates with server-set metadata and reads it back', async () => {
    const created = await c.core.createNamespacedConfigMap({ namespace: c.namespace, body: cm('one') });
    expect(created.metadata?.uid).toMatch(/^[0-9a-f-]{36}$/);
    expect(Number(created.metadata?.resourceVersion)).toBeGreaterThan(0);
    expect(created.metadata?.creationTimestamp).toBeInstanceOf(Date);
    const read = await c.core.readNamespacedConfigMap({ name: 'one', namespace: c.namespace });
    expect(read.data).toEqual({ k: 'v' });
    expect(read.metadata?.resourceVersion).toBe(created.metadata?.resourceVersion);
  });

  it('answers 404 NotFound and 409 AlreadyExists with the real messages', async () => {
    const nf = await expectStatus(
      c.core.readNamespacedConfigMap({ name: 'missing', namespace: c.namespace }),
      404,
      'NotFound',
    );
    expect(nf.message).toBe('configmaps "missing" not found');
    const dep = await expectStatus(
      c.apps.readNamespacedDeployment({ name: 'missing', namespace: c.namespace }),
      404,
      'NotFound',
    );
    expect(dep.message).toBe('deployments.apps "missing" not found');
    await c.core.createNamespacedConfigMap({ namespace: c.namespace, body: cm('dup') });
    const ae = await expectStatus(
      c.core.createNamespacedConfigMap({ namespace: c.namespace, body: cm('dup') }),
      409,
      'AlreadyExists',
    );
    expect(ae.message).toBe('configmaps "dup" already exists');
  });

  it('creates in a missing namespace with 404', async () => {
    await expectStatus(
      c.core.createNamespacedConfigMap({ namespace: 'no-such-ns-x1', body: cm('a') }),
      404,
      'NotFound',
    );
  });

  it('generates names from generateName', async () => {
    const a = await c.core.createNamespacedConfigMap({
      namespace: c.namespace,
      body: { metadata: { generateName: 'gen-' } },
    });
    const b = await c.core.createNamespacedConfigMap({
      namespace: c.namespace,
      body: { metadata: { generateName: 'gen-' } },
    });
    expect(a.metadata?.name).toMatch(/^gen-[a-z0-9]{5}$/);
    expect(b.metadata?.name).not.toBe(a.metadata?.name);
  });

  it('rejects a stale resourceVersion with 409 Conflict and accepts the current one', async () => {
    const v1 = await c.core.createNamespacedConfigMap({ namespace: c.namespace, body: cm('occ') });
    const v2 = await c.core.replaceNamespacedConfigMap({
      name: 'occ',
      namespace: c.namespace,
      body: { ...v1, data: { k: 'v2' } },
    });
    expect(v2.metadata?.resourceVersion).not.toBe(v1.metadata?.resourceVersion);
    const conflict = await expectStatus(
      c.core.replaceNamespacedConfigMap({
        name: 'occ',
        namespace: c.namespace,
        body: { ...v1, data: { k: 'v3' } },
      }),
      409,
      'Conflict',
    );
    expect(conflict.message).toContain(
      'Operation cannot be fulfilled on configmaps "occ": the object has been modified',
    );
    // An update without a resourceVersion is unconditional.
    const v3 = await c.core.replaceNamespacedConfigMap({
      name: 'occ',
      namespace: c.namespace,
      body: { metadata: { name: 'occ' }, data: { k: 'v4' } },
    });
    expect(v3.data).toEqual({ k: 'v4' });
  });

  it('rejects a body whose name differs from the URL with 400', async () => {
    await c.core.createNamespacedConfigMap({ namespace: c.namespace, body: cm('named') });
    await expectStatus(
      c.core.replaceNamespacedConfigMap({ name: 'named', namespace: c.namespace, body: cm('other') }),
      400,
      'BadRequest',
    );
  });

  it('bumps generation on spec changes only', async () => {
    const d = await c.apps.createNamespacedDeployment({
      namespace: c.namespace,
      body: deploymentBody('gen'),
    });
    expect(d.metadata?.generation).toBe(1);
    expect(d.spec?.strategy?.type).toBe('RollingUpdate');
    expect(d.spec?.revisionHistoryLimit).toBe(10);
    const labelled = await c.apps.patchNamespacedDeployment(
      { name: 'gen', namespace: c.namespace, body: { metadata: { labels: { extra: 'x' } } } },
      setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
    );
    expect(labelled.metadata?.generation).toBe(1);
    const scaled = await c.apps.patchNamespacedDeployment(
      { name: 'gen', namespace: c.namespace, body: { spec: { replicas: 0 } } },
      setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
    );
    expect(scaled.metadata?.generation).toBe(2);
  });

  it('answers DELETE with a Status for most kinds', async () => {
    await c.core.createNamespacedConfigMap({ namespace: c.namespace, body: cm('del') });
    const status = await c.core.deleteNamespacedConfigMap({ name: 'del', namespace: c.namespace });
    expect(status.status).toBe('Success');
    await expectStatus(c.core.readNamespacedConfigMap({ name: 'del', namespace: c.namespace }), 404);
    await expectStatus(
      c.core.deleteNamespacedConfigMap({ name: 'del', namespace: c.namespace }),
      404,
      'NotFound',
    );
  });

  it('turns Secret stringData into base64 data', async () => {
    const s = await c.core.createNamespacedSecret({
      namespace: c.namespace,
      body: { metadata: { name: 'sec' }, stringData: { password: 'hunter2' } },
    });
    expect(s.type).toBe('Opaque');
    expect(s.data).toEqual({ password: Buffer.from('hunter2').toString('base64') });
    expect(s.stringData).toBeUndefined();
  });
});

describe('patch', () => {
  it('applies merge, strategic-merge and json patches', async () => {
    await c.apps.createNamespacedDeployment({ namespace: c.namespace, body: deploymentBody('pt', 0) });
    const strategic = await c.apps.patchNamespacedDeployment(
      {
        name: 'pt',
        namespace: c.namespace,
        body: {
          spec: { template: { spec: { containers: [{ name: 'app', env: [{ name: 'A', value: '1' }] }] } } },
        },
      },
      setHeaderOptions('Content-Type', PatchStrategy.StrategicMergePatch),
    );
    // Strategic merge keeps the container's other fields (merged by name).
    expect(strategic.spec?.template.spec?.containers[0]).toMatchObject({
      name: 'app',
      image: 'registry.example/app:1',
      env: [{ name: 'A', value: '1' }],
    });
    const json = await c.apps.patchNamespacedDeployment(
      { name: 'pt', namespace: c.namespace, body: [{ op: 'replace', path: '/spec/replicas', value: 2 }] },
      setHeaderOptions('Content-Type', PatchStrategy.JsonPatch),
    );
    expect(json.spec?.replicas).toBe(2);
  });

  it('rejects an object sent as json-patch (client-node 1.x default) with 400', async () => {
    await c.core.createNamespacedConfigMap({ namespace: c.namespace, body: cm('jp') });
    await expectStatus(
      c.core.patchNamespacedConfigMap({ name: 'jp', namespace: c.namespace, body: { data: { k: 'x' } } }),
      400,
      'BadRequest',
    );
  });

  it('checks a resourceVersion given in a patch', async () => {
    const o = await c.core.createNamespacedConfigMap({ namespace: c.namespace, body: cm('prv') });
    await c.core.patchNamespacedConfigMap(
      { name: 'prv', namespace: c.namespace, body: { data: { k: 'changed' } } },
      setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
    );
    await expectStatus(
      c.core.patchNamespacedConfigMap(
        {
          name: 'prv',
          namespace: c.namespace,
          body: { metadata: { resourceVersion: o.metadata?.resourceVersion }, data: { k: 'x' } },
        },
        setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
      ),
      409,
      'Conflict',
    );
  });

  it('creates with server-side apply when the object is missing', async () => {
    const applied = await c.core.patchNamespacedConfigMap(
      {
        name: 'ssa',
        namespace: c.namespace,
        fieldManager: 'contract',
        body: {
          apiVersion: 'v1',
          kind: 'ConfigMap',
          metadata: { name: 'ssa', namespace: c.namespace },
          data: { a: 'b' },
        },
      },
      setHeaderOptions('Content-Type', PatchStrategy.ServerSideApply),
    );
    expect(applied.data).toEqual({ a: 'b' });
  });
});

describe('list', () => {
  beforeAll(async () => {
    for (let i = 0; i < 12; i++) {
      await c.core.createNamespacedConfigMap({
        namespace: c.namespace,
        body: cm(`l-${String(i).padStart(2, '0')}`, {
          set: 'list',
          tier: i % 3 === 0 ? 'a' : i % 3 === 1 ? 'b' : 'c',
          ...(i < 4 ? { low: 'yes' } : {}),
        }),
      });
    }
  });

  it('filters by equality and set-based label selectors', async () => {
    const names = async (labelSelector: string) =>
      (await c.core.listNamespacedConfigMap({ namespace: c.namespace, labelSelector })).items.map(
        (i) => i.metadata?.name,
      );
    expect(await names('set=list,tier=a')).toEqual(['l-00', 'l-03', 'l-06', 'l-09']);
    expect(await names('set=list,tier!=a')).toHaveLength(8);
    expect(await names('set=list,tier in (a,b)')).toHaveLength(8);
    expect(await names('set=list,tier notin (a,b)')).toEqual(['l-02', 'l-05', 'l-08', 'l-11']);
    expect(await names('set=list,low')).toEqual(['l-00', 'l-01', 'l-02', 'l-03']);
    expect(await names('set=list,!low')).toHaveLength(8);
    await expectStatus(
      c.core.listNamespacedConfigMap({ namespace: c.namespace, labelSelector: 'tier in (a' }),
      400,
      'BadRequest',
    );
  });

  it('filters by metadata.name and rejects unsupported fields', async () => {
    const one = await c.core.listNamespacedConfigMap({
      namespace: c.namespace,
      fieldSelector: 'metadata.name=l-05',
    });
    expect(one.items.map((i) => i.metadata?.name)).toEqual(['l-05']);
    await expectStatus(
      c.core.listNamespacedConfigMap({ namespace: c.namespace, fieldSelector: 'spec.nothing=x' }),
      400,
      'BadRequest',
    );
  });

  it('paginates with limit and continue on one resourceVersion', async () => {
    const seen: string[] = [];
    let token: string | undefined;
    let rv: string | undefined;
    let pages = 0;
    do {
      const page = await c.core.listNamespacedConfigMap({
        namespace: c.namespace,
        labelSelector: 'set=list',
        limit: 5,
        _continue: token,
      });
      pages++;
      seen.push(...page.items.map((i) => i.metadata?.name ?? ''));
      rv ??= page.metadata?.resourceVersion;
      expect(page.metadata?.resourceVersion).toBe(rv);
      token = page.metadata?._continue;
    } while (token);
    expect(pages).toBe(3);
    expect(seen).toEqual([...seen].sort());
    expect(new Set(seen).size).toBe(12);
  });

  it('deletes a collection by label selector', async () => {
    for (const n of ['dc-1', 'dc-2', 'dc-3']) {
      await c.core.createNamespacedConfigMap({
        namespace: c.namespace,
        body: cm(n, { dc: n === 'dc-3' ? 'keep' : 'go' }),
      });
    }
    await c.core.deleteCollectionNamespacedConfigMap({ namespace: c.namespace, labelSelector: 'dc=go' });
    const left = await c.core.listNamespacedConfigMap({ namespace: c.namespace, labelSelector: 'dc' });
    expect(left.items.map((i) => i.metadata?.name)).toEqual(['dc-3']);
  });
});

describe('subresources', () => {
  it('keeps status out of main writes and spec out of status writes', async () => {
    // A Service: no controller writes its status, so nothing races the test on a real cluster.
    const svc = await c.core.createNamespacedService({
      namespace: c.namespace,
      body: { metadata: { name: 'st' }, spec: { selector: { app: 'st' }, ports: [{ port: 80 }] } },
    });
    const lb = { loadBalancer: { ingress: [{ ip: '192.0.2.10' }] } };
    const withStatus = await c.core.replaceNamespacedServiceStatus({
      name: 'st',
      namespace: c.namespace,
      body: { ...svc, spec: { ...svc.spec, ports: [{ port: 81 }] }, status: lb },
    });
    expect(withStatus.status?.loadBalancer?.ingress?.[0]?.ip).toBe('192.0.2.10');
    expect(withStatus.spec?.ports?.[0]?.port).toBe(80);
    const main = await c.core.replaceNamespacedService({
      name: 'st',
      namespace: c.namespace,
      body: { ...withStatus, status: { loadBalancer: {} } },
    });
    expect(main.status?.loadBalancer?.ingress?.[0]?.ip).toBe('192.0.2.10');
  });

  it('reads and writes the scale subresource', async () => {
    await c.apps.createNamespacedDeployment({ namespace: c.namespace, body: deploymentBody('sc', 0) });
    const scale = await c.apps.readNamespacedDeploymentScale({ name: 'sc', namespace: c.namespace });
    // Scale's spec.replicas is omitempty: zero comes back absent.
    expect(scale.spec?.replicas ?? 0).toBe(0);
    expect(scale.status?.selector).toBe('app=sc');
    await c.apps.patchNamespacedDeploymentScale(
      { name: 'sc', namespace: c.namespace, body: { spec: { replicas: 4 } } },
      setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
    );
    const d = await c.apps.readNamespacedDeployment({ name: 'sc', namespace: c.namespace });
    expect(d.spec?.replicas).toBe(4);
  });
});

describe('validation', () => {
  it('rejects invalid names, labels and annotations with 422 Invalid and causes', async () => {
    const bad = await expectStatus(
      c.core.createNamespacedConfigMap({ namespace: c.namespace, body: cm('Not_Valid') }),
      422,
      'Invalid',
    );
    expect((bad.details?.['causes'] as { field: string }[])[0]?.field).toBe('metadata.name');
    await expectStatus(
      c.core.createNamespacedConfigMap({
        namespace: c.namespace,
        body: cm('longlabel', { l: 'x'.repeat(64) }),
      }),
      422,
      'Invalid',
    );
    await expectStatus(
      c.core.createNamespacedConfigMap({
        namespace: c.namespace,
        body: { metadata: { name: 'bigann', annotations: { a: 'x'.repeat(256 * 1024 + 1) } } },
      }),
      422,
      'Invalid',
    );
  });

  it('rejects a Deployment whose selector does not match its template', async () => {
    const body = deploymentBody('mismatch');
    body.spec.selector.matchLabels.app = 'other';
    const s = await expectStatus(
      c.apps.createNamespacedDeployment({ namespace: c.namespace, body }),
      422,
      'Invalid',
    );
    expect(s.message).toContain('spec.template.metadata.labels');
  });
});

describe("env var names, as the cluster's version allows them", () => {
  // RelaxedEnvironmentVariableValidation is on by default from 1.32 (beta) and locked on from 1.34 (GA).
  it('refuses "MY VAR" with the API server\'s 422 before 1.32, and takes it from 1.32', async () => {
    const { VersionApi } = await import('@kubernetes/client-node');
    const minor = Number.parseInt((await c.kc.makeApiClient(VersionApi).getCode()).minor, 10);
    const body = deploymentBody('envname', 1, 'registry.example/app:1', [{ name: 'MY VAR', value: 'x' }]);
    const create = c.apps.createNamespacedDeployment({ namespace: c.namespace, body });
    if (minor >= 32) {
      expect((await create).spec?.template.spec?.containers[0]?.env?.[0]?.name).toBe('MY VAR');
      return;
    }
    const s = await expectStatus(create, 422, 'Invalid');
    const detail =
      "Invalid value: \"MY VAR\": a valid environment variable name must consist of alphabetic characters, digits, '_', '-', or '.', and must not start with a digit (e.g. 'my.env-name',  or 'MY_ENV.NAME',  or 'MyEnvName1', regex used for validation is '[-._a-zA-Z][-._a-zA-Z0-9]*')";
    expect(s.message).toBe(
      `Deployment.apps "envname" is invalid: spec.template.spec.containers[0].env[0].name: ${detail}`,
    );
    expect(s.details?.['causes']).toEqual([
      { reason: 'FieldValueInvalid', field: 'spec.template.spec.containers[0].env[0].name', message: detail },
    ]);
  });
});

describe('authentication', () => {
  it('answers an unknown bearer token with 401', async () => {
    const kc = new KubeConfig();
    kc.loadFromString(c.kc.exportConfig());
    const user = kc.getCurrentUser();
    if (!user) throw new Error('no user');
    (user as { token?: string }).token = 'not-a-valid-token';
    const core = kc.makeApiClient(CoreV1Api);
    await expect(core.listNamespacedConfigMap({ namespace: c.namespace })).rejects.toMatchObject({
      code: 401,
    });
    await expect(core.listNamespacedConfigMap({ namespace: c.namespace })).rejects.toBeInstanceOf(
      ApiException,
    );
  });
});

if (!useRealCluster) {
  describe('simulator only', () => {
    it('is reachable with the token of its kubeconfig', async () => {
      const v = await fetch(`${c.sim!.httpUrl}/version`, {
        headers: { authorization: `Bearer ${c.sim!.token}` },
      });
      expect(((await v.json()) as { major: string }).major).toBe('1');
    });
  });
}
