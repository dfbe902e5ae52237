/**
 * OPI_NAMESPACE names a namespace the cluster does not have: the API's and the worker's /readyz say so
 * by name, a desire is still taken, and once the namespace is created the service recovers by itself
 * (the Lease is claimed, the cache written, the desired app created) and /readyz turns ready.
 */
import { desireBody, uuid } from '@opi/contract/testing';
import { type Service, call, eventually, startService } from '../../support/service.js';

const MISSING = 'not-created-yet';

describe('OPI_NAMESPACE that does not exist', () => {
  let s: Service;

  beforeAll(async () => {
    s = await startService({ env: { OPI_NAMESPACE: MISSING }, workerMetrics: true });
  });
  afterAll(async () => {
    await s.close();
  });

  const readyz = async (base: string) => {
    const r = await fetch(`${base}/readyz`);
    return {
      status: r.status,
      body: (await r.json()) as { checks: Record<string, { ok: boolean; message: string }> },
    };
  };

  it('is named in both /readyz, and the service recovers once the namespace exists', async () => {
    const api = await eventually(async () => {
      const r = await readyz(s.base);
      return r.body.checks['cluster']?.ok === false ? r : undefined;
    }, "the API's /readyz to name the namespace");
    expect(api.status).toBe(503);
    expect(api.body.checks['cluster']?.message).toMatch(
      new RegExp(`^namespace ${MISSING} does not exist: .*kubectl create namespace ${MISSING}`),
    );
    const worker = await readyz(`http://127.0.0.1:${s.workers[0]!.metricsPort!}`);
    expect(worker.status).toBe(503);
    expect(worker.body.checks['kubernetes']).toEqual({
      ok: false,
      message: `reachable, but namespace ${MISSING} does not exist (OPI_NAMESPACE)`,
    });

    const guid = uuid(1, 'ns');
    const version = uuid(2, 'ns');
    expect((await call(s.base, 'PUT', `/apps/${guid}-${version}`, desireBody(guid, version))).status).toBe(
      202,
    );

    await s.core.createNamespace({ body: { metadata: { name: MISSING } } });
    await eventually(
      async () => (await readyz(s.base)).status === 200,
      "the API's /readyz to turn ready once the namespace exists",
    );
    await eventually(
      async () =>
        (await s.apps.listNamespacedDeployment({ namespace: MISSING })).items.some(
          (d) => d.metadata?.annotations?.['cloudfoundry.org/process_guid'] === `${guid}-${version}`,
        ),
      'the desired app to be created in the new namespace',
    );
    await eventually(
      async () => (await readyz(`http://127.0.0.1:${s.workers[0]!.metricsPort!}`)).status === 200,
      "the worker's /readyz to turn ready",
    );
  }, 120_000);
});
