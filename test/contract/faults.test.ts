/** Fault injection (simulator only): errors with Retry-After, drops, conflicts, latency, cut watches. */
import { Watch } from '@kubernetes/client-node';
import { type TestCluster, describeSimOnly, eventually, expectStatus, startTestCluster } from './cluster.js';

let c: TestCluster;
beforeAll(async () => {
  c = await startTestCluster('faults', { controllers: false });
});
afterAll(async () => {
  await c.close();
});
afterEach(() => {
  c.sim?.faults.reset();
});

function admin(path: string, init: RequestInit = {}): Promise<Response> {
  return fetch(`${c.sim!.httpUrl}${path}`, {
    ...init,
    headers: {
      authorization: `Bearer ${c.sim!.token}`,
      'content-type': 'application/json',
    },
  });
}

describeSimOnly('fault injection', () => {
  it('answers 503 and 429 with Retry-After, as configured through the admin endpoint', async () => {
    const put = await admin('/sim/faults', {
      method: 'PUT',
      body: JSON.stringify({ errorRate: 1, errorCodes: [503], retryAfterSeconds: 7 }),
    });
    expect(put.status).toBe(200);
    await expectStatus(c.core.listNamespacedConfigMap({ namespace: c.namespace }), 503, 'ServiceUnavailable');
    const raw = await fetch(`${c.sim!.httpUrl}/api/v1/namespaces/${c.namespace}/configmaps`, {
      headers: { authorization: `Bearer ${c.sim!.token}` },
    });
    expect(raw.headers.get('retry-after')).toBe('7');
    c.sim!.faults.set({ errorCodes: [429] });
    const s = await expectStatus(
      c.core.listNamespacedConfigMap({ namespace: c.namespace }),
      429,
      'TooManyRequests',
    );
    expect(s.details?.['retryAfterSeconds']).toBe(7);
    const state = (await (await admin('/sim/faults')).json()) as { injected: { errors: number } };
    expect(state.injected.errors).toBeGreaterThanOrEqual(3);
    expect((await admin('/sim/faults', { method: 'DELETE' })).status).toBe(200);
    await c.core.listNamespacedConfigMap({ namespace: c.namespace });
  });

  it('limits faults to the verbs and resources named', async () => {
    c.sim!.faults.set({ errorRate: 1, errorCodes: [500], verbs: ['create'], resources: ['secrets'] });
    await expectStatus(
      c.core.createNamespacedSecret({ namespace: c.namespace, body: { metadata: { name: 's' } } }),
      500,
      'InternalError',
    );
    await c.core.createNamespacedConfigMap({
      namespace: c.namespace,
      body: { metadata: { name: 'unaffected' } },
    });
    await c.core.listNamespacedSecret({ namespace: c.namespace });
  });

  it('drops connections without an answer', async () => {
    c.sim!.faults.set({ dropRate: 1 });
    await expect(c.core.listNamespacedConfigMap({ namespace: c.namespace })).rejects.toThrow();
  });

  it('answers writes with 409 Conflict while reads still work', async () => {
    const o = await c.core.createNamespacedConfigMap({
      namespace: c.namespace,
      body: { metadata: { name: 'cf' } },
    });
    c.sim!.faults.set({ conflictRate: 1 });
    await expectStatus(
      c.core.replaceNamespacedConfigMap({ name: 'cf', namespace: c.namespace, body: o }),
      409,
      'Conflict',
    );
    await c.core.readNamespacedConfigMap({ name: 'cf', namespace: c.namespace });
  });

  it('adds latency', async () => {
    c.sim!.faults.set({ latencyMs: 3000 });
    // A client that gives up first sees a time-out; without the fault the same call answers.
    await expect(
      fetch(`${c.sim!.httpUrl}/api/v1/namespaces/${c.namespace}/configmaps`, {
        headers: { authorization: `Bearer ${c.sim!.token}` },
        signal: AbortSignal.timeout(300),
      }),
    ).rejects.toThrow();
    c.sim!.faults.reset();
    const ok = await fetch(`${c.sim!.httpUrl}/api/v1/namespaces/${c.namespace}/configmaps`, {
      headers: { authorization: `Bearer ${c.sim!.token}` },
      signal: AbortSignal.timeout(5000),
    });
    expect(ok.status).toBe(200);
  });

  it('cuts open watch streams', async () => {
    let ended: unknown = 'open';
    await new Watch(c.kc).watch(
      `/api/v1/namespaces/${c.namespace}/configmaps`,
      {},
      () => undefined,
      (err) => {
        ended = err ?? null;
      },
    );
    await eventually(
      async () => ((await (await admin('/sim/stats')).json()) as { watches: number }).watches >= 1,
      'the watch to open',
    );
    const cut = (await (await admin('/sim/watches/cut', { method: 'POST' })).json()) as { cut: number };
    expect(cut.cut).toBeGreaterThanOrEqual(1);
    await eventually(async () => ended !== 'open', 'the watch to end');
  });

  it('refuses a bad fault configuration with 400 and keeps the old one', async () => {
    const res = await admin('/sim/faults', { method: 'PUT', body: JSON.stringify({ errorRate: 2 }) });
    expect(res.status).toBe(400);
    expect(((await res.json()) as { message: string }).message).toContain('errorRate');
    expect(c.sim!.faults.current.errorRate).toBe(0);
  });

  it('needs the token for the admin endpoints', async () => {
    const res = await fetch(`${c.sim!.httpUrl}/sim/faults`);
    expect(res.status).toBe(401);
  });
});
