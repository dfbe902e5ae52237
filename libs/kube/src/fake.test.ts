import { describe, expect, it } from '@jest/globals';
import { AlreadyExistsError, ConflictError, KubeApiError } from './errors.js';
import { FakeKubernetes } from './fake.js';
import type { Deployment, Job, Pod, Secret } from './objects.js';
import type { WatchEvent } from './port.js';

const NS = 'cf-apps';

function deployment(name: string, labels: Record<string, string> = { app: name }, replicas = 1): Deployment {
  return {
    metadata: { name, labels },
    spec: {
      replicas,
      selector: { matchLabels: { app: name } },
      template: {
        metadata: { labels: { app: name } },
        spec: { containers: [{ name: 'app', image: 'i:1' }] },
      },
    },
  };
}

function job(name: string): Job {
  return {
    metadata: { name },
    spec: {
      template: { spec: { restartPolicy: 'Never', containers: [{ name: 'task', image: 'i:1' }] } },
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
  throw new Error('expected a KubeApiError');
}

describe('FakeKubernetes: objects', () => {
  it('creates with identity, increasing resourceVersions, generation 1, and reads back copies', async () => {
    const k = new FakeKubernetes({ namespaces: [NS] });
    const a = await k.createDeployment(NS, deployment('a'));
    const b = await k.createDeployment(NS, deployment('b'));
    expect(a.metadata).toMatchObject({ name: 'a', namespace: NS, generation: 1 });
    expect(a.metadata.uid).toMatch(/^[0-9a-f-]{36}$/);
    expect(Number(b.metadata.resourceVersion)).toBeGreaterThan(Number(a.metadata.resourceVersion));
    expect(a.apiVersion).toBe('apps/v1');
    expect(a.metadata.creationTimestamp).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);
    const read = await k.getDeployment(NS, 'a');
    expect(read).toEqual(a);
    read!.spec!.replicas = 9; // a copy: the store is untouched
    expect((await k.getDeployment(NS, 'a'))!.spec!.replicas).toBe(1);
  });

  it('answers 404 as undefined and deletes of missing objects as absent', async () => {
    const k = new FakeKubernetes({ namespaces: [NS] });
    expect(await k.getDeployment(NS, 'nope')).toBeUndefined();
    expect(await k.getSecret('no-such-ns', 'x')).toBeUndefined();
    await k.createSecret(NS, { metadata: { name: 's' }, stringData: { k: 'v' } });
    expect(await k.deleteSecret(NS, 's')).toBe('deleted');
    expect(await k.deleteSecret(NS, 's')).toBe('absent');
    expect(await k.deletePod(NS, 'p')).toBe('absent');
  });

  it('refuses a second create with AlreadyExists (permanent)', async () => {
    const k = new FakeKubernetes({ namespaces: [NS] });
    await k.createDeployment(NS, deployment('web'));
    const e = await rejection(k.createDeployment(NS, deployment('web')));
    expect(e).toBeInstanceOf(AlreadyExistsError);
    expect(e).toMatchObject({ status: 409, reason: 'AlreadyExists', transient: false });
    expect(e.message).toBe('deployments.apps "web" already exists');
  });

  it('refuses writes into a namespace that does not exist, and invalid names', async () => {
    const k = new FakeKubernetes();
    expect(await rejection(k.createDeployment('elsewhere', deployment('web')))).toMatchObject({
      status: 404,
      transient: false,
    });
    expect(await rejection(k.createDeployment('default', deployment('Bad_Name')))).toMatchObject({
      status: 422,
      reason: 'Invalid',
      transient: false,
    });
  });

  it('replaces with a current resourceVersion, and refuses a stale one with Conflict (transient)', async () => {
    const k = new FakeKubernetes({ namespaces: [NS] });
    const v1 = await k.createDeployment(NS, deployment('web'));
    const v2 = await k.replaceDeployment(NS, {
      ...deployment('web', { app: 'web' }, 3),
      metadata: { ...v1.metadata },
    });
    expect(v2.spec?.replicas).toBe(3);
    expect(v2.metadata.generation).toBe(2);
    expect(v2.metadata.uid).toBe(v1.metadata.uid);
    expect(Number(v2.metadata.resourceVersion)).toBeGreaterThan(Number(v1.metadata.resourceVersion));
    const stale = await rejection(
      k.replaceDeployment(NS, { ...deployment('web', { app: 'web' }, 5), metadata: v1.metadata }),
    );
    expect(stale).toBeInstanceOf(ConflictError);
    expect(stale).toMatchObject({ status: 409, reason: 'Conflict', transient: true });
    expect((await k.getDeployment(NS, 'web'))!.spec!.replicas).toBe(3);
  });

  it('keeps the resourceVersion and generation on a replace that changes nothing', async () => {
    const k = new FakeKubernetes({ namespaces: [NS] });
    const v1 = await k.createDeployment(NS, deployment('web'));
    const same = await k.replaceDeployment(NS, v1);
    expect(same.metadata.resourceVersion).toBe(v1.metadata.resourceVersion);
    expect(same.metadata.generation).toBe(1);
  });

  it('keeps status out of creates and replaces; setStatus is how a controller writes it', async () => {
    const k = new FakeKubernetes({ namespaces: [NS] });
    const created = await k.createDeployment(NS, { ...deployment('web'), status: { readyReplicas: 7 } });
    expect(created.status).toBeUndefined();
    k.setStatus('deployments', NS, 'web', { readyReplicas: 1 });
    const read = (await k.getDeployment(NS, 'web'))!;
    expect(read.status?.readyReplicas).toBe(1);
    expect(Number(read.metadata.resourceVersion)).toBeGreaterThan(Number(created.metadata.resourceVersion));
    const replaced = await k.replaceDeployment(NS, { ...read, status: { readyReplicas: 99 } });
    expect(replaced.status?.readyReplicas).toBe(1);
    expect(replaced.metadata.generation).toBe(1);
  });

  it('refuses a replace of something missing with a permanent 404', async () => {
    const k = new FakeKubernetes({ namespaces: [NS] });
    expect(await rejection(k.replaceSecret(NS, { metadata: { name: 'x' } }))).toMatchObject({
      status: 404,
      reason: 'NotFound',
      transient: false,
    });
  });

  it('folds stringData into data and guards immutable secrets', async () => {
    const k = new FakeKubernetes({ namespaces: [NS] });
    const s = await k.createSecret(NS, {
      metadata: { name: 's' },
      stringData: { user: 'me' },
      immutable: true,
    });
    expect(s.data).toEqual({ user: Buffer.from('me').toString('base64') });
    expect(s.stringData).toBeUndefined();
    expect(s.type).toBe('Opaque');
    const changed: Secret = { ...s, data: { user: 'eW91' } };
    expect(await rejection(k.replaceSecret(NS, changed))).toMatchObject({ status: 422, transient: false });
  });

  it('gives Jobs a generated selector and refuses template changes, as the Job registry does', async () => {
    const k = new FakeKubernetes({ namespaces: [NS] });
    const j = await k.createJob(NS, job('task-1'));
    expect(j.spec?.selector?.matchLabels).toEqual({ 'batch.kubernetes.io/controller-uid': j.metadata.uid });
    expect(j.spec?.template.metadata?.labels?.['job-name']).toBe('task-1');
    const other = job('task-1');
    other.metadata.resourceVersion = j.metadata.resourceVersion;
    expect(await rejection(k.replaceJob(NS, other))).toMatchObject({ status: 422, transient: false });
  });

  it('deletes what a deleted object owned (Background propagation)', async () => {
    const k = new FakeKubernetes({ namespaces: [NS] });
    const j = await k.createJob(NS, job('task-1'));
    const owner = {
      apiVersion: 'batch/v1',
      kind: 'Job',
      name: 'task-1',
      uid: j.metadata.uid,
      controller: true,
    };
    k.put<Pod>('pods', NS, { metadata: { name: 'task-1-abcde', ownerReferences: [owner] } });
    k.put<Pod>('pods', NS, { metadata: { name: 'unrelated' } });
    expect(await k.deleteJob(NS, 'task-1')).toBe('deleted');
    expect(k.objects('pods', NS).map((p) => p.metadata.name)).toEqual(['unrelated']);
  });
});

describe('FakeKubernetes: lists', () => {
  async function seeded() {
    const k = new FakeKubernetes({ namespaces: [NS, 'other'] });
    await k.createDeployment(NS, deployment('a', { app: 'a', tier: 'web' }));
    await k.createDeployment(NS, deployment('b', { app: 'b', tier: 'worker' }));
    await k.createDeployment(NS, deployment('c', { app: 'c' }));
    await k.createDeployment('other', deployment('d', { app: 'd', tier: 'web' }));
    return k;
  }

  it('filters by namespace and label selector, sorted by namespace and name', async () => {
    const k = await seeded();
    const names = async (ns: string | undefined, sel?: string) =>
      (await k.listDeployments(ns, sel)).items.map((d) => `${d.metadata.namespace ?? ''}/${d.metadata.name}`);
    expect(await names(NS)).toEqual([`${NS}/a`, `${NS}/b`, `${NS}/c`]);
    expect(await names(undefined, 'tier=web')).toEqual([`${NS}/a`, 'other/d']);
    expect(await names(undefined, 'tier')).toEqual([`${NS}/a`, `${NS}/b`, 'other/d']);
    expect(await names(undefined, '!tier')).toEqual([`${NS}/c`]);
    expect(await names(NS, 'tier in (web,worker),app!=b')).toEqual([`${NS}/a`]);
    expect(await names(undefined, 'tier notin (web)')).toEqual([`${NS}/b`, `${NS}/c`]);
  });

  it('answers a malformed selector with a permanent 400', async () => {
    const k = await seeded();
    expect(await rejection(k.listDeployments(NS, 'tier in (web'))).toMatchObject({
      status: 400,
      transient: false,
    });
    expect(await rejection(k.listDeployments(NS, 'bad key!=x'))).toMatchObject({ status: 400 });
  });

  it('returns the store resourceVersion and counts one call per page', async () => {
    const k = await seeded();
    const before = k.calls.length;
    const list = await k.listDeployments(undefined, undefined, 2);
    expect(list.items).toHaveLength(4);
    expect(list.resourceVersion).toBe(k.resourceVersion);
    expect(k.calls.slice(before).map((c) => c.verb)).toEqual(['list', 'list']);
  });

  it('filters events by field selector, refusing unsupported fields', async () => {
    const k = new FakeKubernetes({ namespaces: [NS] });
    const ev = (name: string, pod: string, reason: string) => ({
      metadata: { name },
      involvedObject: { kind: 'Pod', name: pod, namespace: NS },
      reason,
      source: { component: 'kubelet' },
    });
    k.put('events', NS, ev('e1', 'web-0', 'Started'));
    k.put('events', NS, ev('e2', 'web-1', 'BackOff'));
    const got = await k.listEvents(NS, 'involvedObject.name=web-1,source=kubelet');
    expect(got.items.map((e) => e.reason)).toEqual(['BackOff']);
    expect((await k.listEvents(NS, 'reason!=Started')).items.map((e) => e.metadata.name)).toEqual(['e2']);
    expect(await rejection(k.listEvents(NS, 'spec.nodeName=x'))).toMatchObject({ status: 400 });
  });
});

describe('FakeKubernetes: injected failures', () => {
  it('fails matching calls the given number of times, then recovers', async () => {
    const k = new FakeKubernetes({ namespaces: [NS] });
    k.inject({ verb: 'create', resource: 'deployments', failure: 'unavailable', times: 2 });
    for (let i = 0; i < 2; i++) {
      expect(await rejection(k.createDeployment(NS, deployment('web')))).toMatchObject({
        status: 503,
        transient: true,
        retryAfterSeconds: 1,
      });
    }
    expect(k.objects('deployments')).toHaveLength(0);
    await k.createDeployment(NS, deployment('web'));
    expect(k.calls.filter((c) => c.verb === 'create')).toHaveLength(3);
  });

  it('only fails what the rule names', async () => {
    const k = new FakeKubernetes({ namespaces: [NS] });
    k.inject({ resource: 'secrets', name: 's', failure: 'forbidden', times: Infinity });
    await k.createDeployment(NS, deployment('web'));
    await k.createSecret(NS, { metadata: { name: 'other' } });
    expect(await rejection(k.getSecret(NS, 's'))).toMatchObject({ status: 403, transient: false });
    expect(await rejection(k.getSecret(NS, 's'))).toMatchObject({ status: 403 });
    k.clearFailures();
    expect(await k.getSecret(NS, 's')).toBeUndefined();
  });

  it('can let a write happen and lose its answer', async () => {
    const k = new FakeKubernetes({ namespaces: [NS] });
    k.inject({ verb: 'create', failure: 'timeout', afterEffect: true });
    expect(await rejection(k.createDeployment(NS, deployment('web')))).toMatchObject({
      status: undefined,
      reason: 'Timeout',
      transient: true,
    });
    // The retry then meets the object the lost answer created.
    expect(await rejection(k.createDeployment(NS, deployment('web')))).toBeInstanceOf(AlreadyExistsError);
  });

  it('throws a given KubeApiError as is, and named failures with their classification', async () => {
    const k = new FakeKubernetes({ namespaces: [NS] });
    const custom = new KubeApiError({
      status: 418,
      reason: 'Teapot',
      message: 'short and stout',
      transient: false,
    });
    k.inject({ verb: 'list', failure: custom });
    expect(await rejection(k.listPods(NS))).toBe(custom);
    const cases = [
      ['too-many-requests', 429, true],
      ['internal', 500, true],
      ['connection-reset', undefined, true],
      ['conflict', 409, true],
      ['unauthorized', 401, false],
      ['invalid', 422, false],
    ] as const;
    for (const [failure, status, transient] of cases) {
      k.inject({ verb: 'get', failure });
      expect(await rejection(k.getJob(NS, 'j'))).toMatchObject({ status, transient });
    }
  });
});

describe('FakeKubernetes: leases', () => {
  it('creates, reads and replaces leases, refusing a stale resourceVersion with Conflict', async () => {
    const k = new FakeKubernetes({ namespaces: [NS] });
    expect(await k.getLease(NS, 'cache-writer')).toBeUndefined();
    const spec = { holderIdentity: 'w1', leaseDurationSeconds: 15 };
    const created = await k.createLease(NS, { metadata: { name: 'cache-writer' }, spec });
    expect(created).toMatchObject({ apiVersion: 'coordination.k8s.io/v1', kind: 'Lease', spec });
    expect(await rejection(k.createLease(NS, { metadata: { name: 'cache-writer' } }))).toBeInstanceOf(
      AlreadyExistsError,
    );
    const renewed = await k.replaceLease(NS, { ...created, spec: { ...spec, holderIdentity: 'w2' } });
    expect(renewed.spec?.holderIdentity).toBe('w2');
    expect(Number(renewed.metadata.resourceVersion)).toBeGreaterThan(
      Number(created.metadata.resourceVersion),
    );
    // Another worker that read the first version loses.
    expect(await rejection(k.replaceLease(NS, created))).toBeInstanceOf(ConflictError);
    expect((await k.getLease(NS, 'cache-writer'))?.spec?.holderIdentity).toBe('w2');
  });

  it('refuses lease times that are not MicroTime (six fractional digits), as the API server does', async () => {
    const k = new FakeKubernetes({ namespaces: [NS] });
    const lease = (renewTime: string) => ({ metadata: { name: 'l' }, spec: { renewTime } });
    expect(await rejection(k.createLease(NS, lease('2026-12-01T10:00:00.123Z')))).toMatchObject({
      status: 400,
      transient: false,
    });
    await k.createLease(NS, lease('2026-12-01T10:00:00.123456Z'));
  });
});

describe('FakeKubernetes: watches', () => {
  type Seen = WatchEvent<{ metadata: { name: string; resourceVersion: string } }>;
  const brief = (e: Seen) =>
    e.type === 'ERROR'
      ? `ERROR ${e.object.code}`
      : `${e.type} ${'name' in e.object.metadata ? e.object.metadata.name : ''}`;
  const tick = () => new Promise((resolve) => setImmediate(resolve));

  it('lists the current objects as ADDED, then streams writes and deletes in order', async () => {
    const k = new FakeKubernetes({ namespaces: [NS, 'other'] });
    await k.createDeployment(NS, deployment('a'));
    await k.createDeployment('other', deployment('elsewhere'));
    const seen: Seen[] = [];
    const w = k.watch('deployments', NS, {}, (e) => seen.push(e));
    await tick();
    const a = await k.getDeployment(NS, 'a');
    await k.replaceDeployment(NS, { ...a!, spec: { ...a!.spec!, replicas: 3 } });
    k.setStatus('deployments', NS, 'a', { readyReplicas: 3 });
    await k.createDeployment(NS, deployment('b'));
    await k.deleteDeployment(NS, 'a');
    await tick();
    expect(seen.map(brief)).toEqual(['ADDED a', 'MODIFIED a', 'MODIFIED a', 'ADDED b', 'DELETED a']);
    const rvs = seen.map((e) =>
      Number((e.object as { metadata: { resourceVersion: string } }).metadata.resourceVersion),
    );
    expect([...rvs].sort((x, y) => x - y)).toEqual(rvs);
    expect(k.openWatches).toBe(1);
    w.stop();
    await w.done;
    expect(k.openWatches).toBe(0);
  });

  it('filters by label selector: leaving it is DELETED, entering it ADDED', async () => {
    const k = new FakeKubernetes({ namespaces: [NS] });
    const seen: Seen[] = [];
    const w = k.watch('pods', undefined, { labelSelector: 'tier=web' }, (e) => seen.push(e));
    await tick();
    k.put<Pod>('pods', NS, { metadata: { name: 'p', labels: { tier: 'web' } } });
    k.put<Pod>('pods', NS, { metadata: { name: 'q', labels: { tier: 'db' } } });
    k.put<Pod>('pods', NS, { metadata: { name: 'p', labels: { tier: 'db' } } });
    k.put<Pod>('pods', NS, { metadata: { name: 'q', labels: { tier: 'web' } } });
    await tick();
    expect(seen.map(brief)).toEqual(['ADDED p', 'DELETED p', 'ADDED q']);
    w.stop();
    await w.done;
  });

  it('resumes from a resourceVersion, and answers one older than its history with ERROR 410', async () => {
    const k = new FakeKubernetes({ namespaces: [NS] });
    await k.createJob(NS, job('j1'));
    const from = (await k.listJobs(NS)).resourceVersion;
    await k.createJob(NS, job('j2'));
    await k.annotateJob(NS, 'j1', { reported: 'true' });
    const seen: Seen[] = [];
    const resumed = k.watch('jobs', NS, { resourceVersion: from }, (e) => seen.push(e));
    await tick();
    expect(seen.map(brief)).toEqual(['ADDED j2', 'MODIFIED j1']);
    resumed.stop();
    k.compact();
    const expired: Seen[] = [];
    const old = k.watch('jobs', NS, { resourceVersion: from }, (e) => expired.push(e));
    await old.done; // the server ends the stream after the ERROR
    expect(expired).toEqual([
      { type: 'ERROR', object: expect.objectContaining({ code: 410, reason: 'Expired' }) as unknown },
    ]);
  });

  it('ends after timeoutSeconds with a bookmark, and when the server closes its watches', async () => {
    const k = new FakeKubernetes({ namespaces: [NS] });
    const seen: Seen[] = [];
    const w = k.watch('jobs', NS, { timeoutSeconds: 0, allowWatchBookmarks: true }, (e) => seen.push(e));
    await w.done;
    expect(seen).toEqual([
      { type: 'BOOKMARK', object: { metadata: { resourceVersion: k.resourceVersion } } },
    ]);
    const a = k.watch('jobs', NS, {}, () => undefined);
    const b = k.watch('pods', NS, {}, () => undefined);
    await tick();
    k.endWatches();
    await Promise.all([a.done, b.done]);
    const c = k.watch('pods', NS, {}, () => undefined);
    await tick();
    k.endWatches('connection-reset');
    expect(await rejection(c.done)).toMatchObject({ reason: 'ConnectionReset', transient: true });
  });

  it('rejects done with what onEvent threw, an injected failure, or a bad selector', async () => {
    const k = new FakeKubernetes({ namespaces: [NS] });
    await k.createDeployment(NS, deployment('a'));
    const boom = new Error('boom');
    const w = k.watch('deployments', NS, {}, () => {
      throw boom;
    });
    await expect(w.done).rejects.toBe(boom);
    expect(k.openWatches).toBe(0);
    k.inject({ verb: 'watch', resource: 'pods', failure: 'forbidden' });
    expect(await rejection(k.watch('pods', NS, {}, () => undefined).done)).toMatchObject({ status: 403 });
    expect(
      await rejection(k.watch('pods', NS, { labelSelector: 'a in (' }, () => undefined).done),
    ).toMatchObject({ status: 400 });
    expect(k.calls.filter((c) => c.verb === 'watch')).toHaveLength(3);
  });

  it('lists jobs through a select function', async () => {
    const k = new FakeKubernetes({ namespaces: [NS] });
    await k.createJob(NS, job('j1'));
    await k.createJob(NS, job('j2'));
    const names = await k.listJobs(NS, undefined, 1, (j) =>
      j.metadata.name === 'j2' ? undefined : j.metadata.name,
    );
    expect(names.items).toEqual(['j1']);
  });
});
