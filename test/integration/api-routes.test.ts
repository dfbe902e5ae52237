/**
 * The API's app routes against real Redis and BullMQ (no worker): exact status codes and bodies of the
 * contract (../../../shared/opi-contract.md), what each write records and enqueues, that bad input is
 * refused with `{"error": {"message"}}` naming the field while nothing is recorded or enqueued, and a
 * 503 with Retry-After (not a hang) when Redis cannot be reached.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import type { Express } from 'express';
import type { Redis } from 'ioredis';
import request from 'supertest';
import { createLogger } from '@opi/logging';
import { JobProducer, producerConnection } from '@opi/queue';
import {
  CacheWriter,
  type CachedInstances,
  type InboxEntry,
  StateStore,
  TaskStore,
  parseInboxEntry,
} from '@opi/state';
import { createApp } from '../../apps/api/src/index.js';

const REDIS_URL = 'redis://127.0.0.1:6379';
const PREFIX = `test-api-${randomUUID().slice(0, 8)}`;
const DEFAULTS = {
  namespace: 'cf-workloads',
  dropletRegistry: 'droplets.example.com',
  allowedNamespaces: ['space-dev'],
};
const BODY_LIMIT = 64 * 1024;
const SMALL_BODY_LIMIT = 2048;

const logger = createLogger({ level: 'silent', pretty: false });

interface Env {
  redis: Redis;
  store: StateStore;
  producer: JobProducer;
  app: Express;
  small: Express;
}

let env: Env;
const producers: JobProducer[] = [];
const connections: Redis[] = [];

async function ready(redis: Redis): Promise<void> {
  if (redis.status === 'ready') return;
  await new Promise<void>((resolve, reject) => {
    redis.once('ready', resolve);
    redis.once('end', () => {
      reject(new Error('redis connection ended'));
    });
  });
}

beforeAll(async () => {
  const redis = producerConnection(REDIS_URL);
  connections.push(redis);
  await ready(redis);
  const store = new StateStore(redis, PREFIX);
  const producer = new JobProducer({ connection: redis, prefix: PREFIX, attempts: 3 });
  producers.push(producer);
  const deps = { store, tasks: new TaskStore(redis, PREFIX), producer, logger, defaults: DEFAULTS };
  env = {
    redis,
    store,
    producer,
    app: createApp({ ...deps, bodyLimitBytes: BODY_LIMIT }),
    small: createApp({ ...deps, bodyLimitBytes: SMALL_BODY_LIMIT }),
  };
});

afterAll(async () => {
  for (const p of producers) {
    for (const q of Object.values(p.queues)) await q.obliterate({ force: true });
    await p.close();
  }
  const redis = env.redis;
  let cursor = '0';
  do {
    const [next, found] = await redis.scan(cursor, 'MATCH', `${PREFIX}*`, 'COUNT', 1000);
    cursor = next;
    if (found.length) await redis.del(...found);
  } while (cursor !== '0');
  for (const c of connections) await c.quit();
});

// ---------------------------------------------------------------------------------------------------
// Helpers

interface Lrp {
  guid: string;
  version: string;
  processGuid: string;
}

function newLrp(): Lrp {
  const guid = randomUUID();
  const version = randomUUID();
  return { guid, version, processGuid: `${guid}-${version}` };
}

function desireBody(lrp: Lrp, overrides: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    guid: lrp.guid,
    version: lrp.version,
    process_guid: lrp.processGuid,
    process_type: 'web',
    app_guid: randomUUID(),
    app_name: 'my-app',
    space_guid: randomUUID(),
    space_name: 'dev',
    organization_guid: randomUUID(),
    organization_name: 'acme',
    ports: [8080],
    environment: { VCAP_APPLICATION: '{"limits":{"mem":256}}' },
    instances: 2,
    last_updated: '1589212345.123456',
    health_check_type: 'port',
    health_check_http_endpoint: '',
    health_check_timeout_ms: 60000,
    start_timeout_ms: 60000,
    memory_mb: 256,
    disk_mb: 1024,
    cpu_weight: 10,
    volume_mounts: [],
    lifecycle: { docker_lifecycle: { image: 'registry.example.com/team/app:1', command: [] } },
    user_defined_annotations: {},
    placement_tags: [],
    routes: { cf_router: [] },
    egress_rules: [],
    ...overrides,
  };
}

async function desire(lrp: Lrp, overrides: Record<string, unknown> = {}): Promise<void> {
  const res = await request(env.app).put(`/apps/${lrp.processGuid}`).send(desireBody(lrp, overrides));
  expect(res.status).toBe(202);
}

function updateBody(lrp: Lrp, update: Record<string, unknown>): Record<string, unknown> {
  return { guid: lrp.guid, version: lrp.version, update };
}

interface SchedulingInfo {
  desired_lrp_key: { process_guid: string };
  guid: string;
  version: string;
  annotation: string;
}

async function schedulingInfos(app: Express = env.app): Promise<SchedulingInfo[]> {
  const res = await request(app).get('/apps');
  expect(res.status).toBe(200);
  const body = res.body as { desired_lrp_scheduling_infos: SchedulingInfo[] };
  expect(Array.isArray(body.desired_lrp_scheduling_infos)).toBe(true);
  return body.desired_lrp_scheduling_infos;
}

async function schedulingInfoOf(lrp: Lrp): Promise<SchedulingInfo | undefined> {
  return (await schedulingInfos()).find((s) => s.desired_lrp_key.process_guid === lrp.processGuid);
}

/** The converges the writes asked for one LRP (no worker moves the inbox here, so they stay in it). */
async function convergeJobs(lrp: Lrp): Promise<InboxEntry[]> {
  const raw = await env.redis.lrange(env.store.keys.inbox, 0, -1);
  return raw.map((r) => parseInboxEntry(r)).filter((e) => e?.processGuid === lrp.processGuid) as InboxEntry[];
}

/** Everything a request could change: any record write bumps the generation. */
async function fingerprint(lrp?: Lrp) {
  const { redis, store, producer } = env;
  const [generation, sched, lrps, record, lrpJobs, syncJobs, inbox] = await Promise.all([
    redis.get(store.keys.generation),
    redis.hgetall(store.keys.sched),
    redis.smembers(store.keys.lrps),
    lrp ? redis.get(store.keys.lrp(lrp.processGuid)) : Promise.resolve(null),
    producer.queues.lrp.getJobCounts(),
    producer.queues.sync.getJobCounts(),
    redis.llen(store.keys.inbox),
  ]);
  return { generation, sched, lrps: lrps.sort(), record, lrpJobs, syncJobs, inbox };
}

function expectErrorBody(body: unknown, ...mentions: string[]): string {
  expect(body).toEqual({ error: { message: expect.any(String) } });
  const message = (body as { error: { message: string } }).error.message;
  for (const m of mentions) expect(message).toContain(m);
  return message;
}

/** Replaces the whole instances cache, as the cache writer does (one writer, token 1, throughout). */
async function writeCache(entries: Record<string, CachedInstances>, syncedAt = Date.now()): Promise<void> {
  const writer = new CacheWriter(env.redis, PREFIX);
  await writer.claim(1);
  const snapshot = writer.snapshot(1);
  for (const [pg, cached] of Object.entries(entries)) await snapshot.add(pg, JSON.stringify(cached));
  await snapshot.commit({
    syncedAt: String(syncedAt),
    durationMs: '5',
    deployments: String(Object.keys(entries).length),
    pods: '0',
  });
}

// ---------------------------------------------------------------------------------------------------
// Routes

describe('PUT /apps/:process_guid (desire)', () => {
  it('answers 202 with an empty body, records the LRP and asks for one converge', async () => {
    const lrp = newLrp();
    const res = await request(env.app).put(`/apps/${lrp.processGuid}`).send(desireBody(lrp));
    expect(res.status).toBe(202);
    expect(res.text).toBe('');

    const rec = await env.store.get(lrp.processGuid);
    expect(rec?.state).toBe('desired');
    if (rec?.state !== 'desired') return;
    expect(rec.lrp).toMatchObject({
      processGuid: lrp.processGuid,
      guid: lrp.guid,
      version: lrp.version,
      namespace: 'cf-workloads',
      instances: 2,
      annotation: '1589212345.123456',
      image: 'registry.example.com/team/app:1',
    });
    // Recorded before the answer: CC's next GET /apps must not see it missing.
    expect(await schedulingInfoOf(lrp)).toEqual({
      desired_lrp_key: { process_guid: lrp.processGuid },
      guid: lrp.guid,
      version: lrp.version,
      annotation: '1589212345.123456',
    });
    const jobs = await convergeJobs(lrp);
    expect(jobs).toHaveLength(1);
    expect(jobs[0]).toEqual({
      processGuid: lrp.processGuid,
      fresh: true,
      cause: expect.stringMatching(/^g\d+$/),
    });
  });

  it('answers 202 to a re-desire without changing the record or enqueueing again', async () => {
    const lrp = newLrp();
    await desire(lrp);
    const before = await fingerprint(lrp);
    for (const body of [desireBody(lrp), desireBody(lrp, { instances: 5, last_updated: 'other' })]) {
      const res = await request(env.app).put(`/apps/${lrp.processGuid}`).send(body);
      expect(res.status).toBe(202);
      expect(res.text).toBe('');
    }
    // The fingerprint counts the inbox: nothing more was asked.
    expect(await fingerprint(lrp)).toEqual(before);
    expect(await convergeJobs(lrp)).toHaveLength(1);
  });

  it('desires again after a stop', async () => {
    const lrp = newLrp();
    await desire(lrp);
    expect((await request(env.app).put(`/apps/${lrp.guid}/${lrp.version}/stop`)).status).toBe(200);
    expect(await schedulingInfoOf(lrp)).toBeUndefined();
    await desire(lrp, { last_updated: '2' });
    expect((await schedulingInfoOf(lrp))?.annotation).toBe('2');
    const res = await request(env.app).get(`/apps/${lrp.guid}/${lrp.version}`);
    expect(res.status).toBe(200);
  });

  it('uses the namespace of the request when given', async () => {
    const lrp = newLrp();
    await desire(lrp, { namespace: 'space-dev' });
    const rec = await env.store.get(lrp.processGuid);
    expect(rec?.state === 'desired' && rec.lrp.namespace).toBe('space-dev');
  });

  it('refuses a namespace that is not allowed with a 400, recording and enqueueing nothing', async () => {
    const lrp = newLrp();
    const res = await request(env.app)
      .put(`/apps/${lrp.processGuid}`)
      .send(desireBody(lrp, { namespace: 'kube-system' }));
    expect(res.status).toBe(400);
    expect(res.body).toEqual({ error: { message: expect.stringContaining('namespace "kube-system"') } });
    expect(await env.store.get(lrp.processGuid)).toBeUndefined();
    expect(await convergeJobs(lrp)).toHaveLength(0);
  });
});

describe('GET /apps', () => {
  it('always has the array, also when there is no LRP', async () => {
    const prefix = `${PREFIX}-empty`;
    const producer = new JobProducer({ connection: env.redis, prefix, attempts: 1 });
    producers.push(producer);
    const app = createApp({
      store: new StateStore(env.redis, prefix),
      tasks: new TaskStore(env.redis, prefix),
      producer,
      logger,
      bodyLimitBytes: BODY_LIMIT,
      defaults: DEFAULTS,
    });
    const res = await request(app).get('/apps');
    expect(res.status).toBe(200);
    expect(res.headers['content-type']).toMatch(/^application\/json/);
    expect(res.text).toBe('{"desired_lrp_scheduling_infos":[]}');
  });

  it.each([
    '1589212345.123456',
    '1589212345.1234560',
    '1589212345',
    '1e3',
    '',
    ' spaced  out ',
    'ünïcødé ✓ 🚀 日本',
    'quote " backslash \\ slash / tab \t',
    '\u2028\u2029',
  ])('echoes the annotation %j byte for byte', async (annotation) => {
    const lrp = newLrp();
    await desire(lrp, { last_updated: annotation });
    const res = await request(env.app).get('/apps');
    expect(res.status).toBe(200);
    const entry = JSON.stringify({
      desired_lrp_key: { process_guid: lrp.processGuid },
      guid: lrp.guid,
      version: lrp.version,
      annotation,
    });
    // The raw bytes, not only the parsed value: CC compares the strings.
    expect(res.text).toContain(entry);
    const info = (await schedulingInfoOf(lrp))!;
    expect(info.annotation).toBe(annotation);
    expect(Buffer.from(info.annotation, 'utf8').equals(Buffer.from(annotation, 'utf8'))).toBe(true);
  });

  it('answers the current infos after every kind of change, also from the body it keeps', async () => {
    const a = newLrp();
    const b = newLrp();
    const has = async (lrp: Lrp) => (await schedulingInfoOf(lrp))?.annotation;
    await desire(a, { last_updated: 'a1' });
    expect(await has(a)).toBe('a1');
    expect(await has(a)).toBe('a1'); // the kept body
    await desire(b, { last_updated: 'b1' });
    expect([await has(a), await has(b)]).toEqual(['a1', 'b1']);
    await request(env.app)
      .post(`/apps/${a.processGuid}`)
      .send(updateBody(a, { instances: 2, annotation: 'a2' }))
      .expect(200);
    expect(await has(a)).toBe('a2');
    // A stop keeps the entry until the sync sees the workload gone; the sync then drops it.
    await request(env.app).put(`/apps/${b.guid}/${b.version}/stop`).expect(200);
    await env.store.showExisting(new Map(), [b.processGuid]);
    expect(await has(b)).toBeUndefined();
    // Redis lost everything (the version too): the answer is built again, not the kept one.
    const found = await env.redis.keys(`${env.store.keys.sched}*`);
    await env.redis.del(...found, env.store.keys.lrp(a.processGuid));
    expect(await has(a)).toBeUndefined();
    await desire(a, { last_updated: 'a3' });
    expect(await has(a)).toBe('a3');
  });

  it('lists every desired LRP, old versions included', async () => {
    const v1 = newLrp();
    const v2 = { ...newLrp(), guid: v1.guid };
    v2.processGuid = `${v2.guid}-${v2.version}`;
    await desire(v1, { last_updated: 'a' });
    await desire(v2, { last_updated: 'b' });
    const infos = await schedulingInfos();
    const mine = infos
      .filter((s) => s.guid === v1.guid)
      .sort((a, b) => a.annotation.localeCompare(b.annotation));
    expect(mine).toEqual([
      {
        desired_lrp_key: { process_guid: v1.processGuid },
        guid: v1.guid,
        version: v1.version,
        annotation: 'a',
      },
      {
        desired_lrp_key: { process_guid: v2.processGuid },
        guid: v2.guid,
        version: v2.version,
        annotation: 'b',
      },
    ]);
  });
});

describe('POST /apps/:process_guid (update)', () => {
  it('answers 200 and changes instances and annotation in GET /apps/:guid/:version and GET /apps', async () => {
    const lrp = newLrp();
    await desire(lrp, { instances: 1, last_updated: '1589212345.1' });
    const res = await request(env.app)
      .post(`/apps/${lrp.processGuid}`)
      .send(updateBody(lrp, { instances: 4, annotation: '1589212399.9876540', routes: { cf_router: [] } }));
    expect(res.status).toBe(200);
    expect(res.body).toEqual({});

    const get = await request(env.app).get(`/apps/${lrp.guid}/${lrp.version}`);
    expect(get.status).toBe(200);
    expect(get.body).toEqual({
      desired_lrp: {
        process_guid: lrp.processGuid,
        instances: 4,
        annotation: '1589212399.9876540',
        image: 'registry.example.com/team/app:1',
      },
    });
    expect((await schedulingInfoOf(lrp))?.annotation).toBe('1589212399.9876540');
    // One converge asked per write, each by its generation (the queue de-duplicates them per LRP: the
    // waiting job reads the latest record when it runs; inbox-pump.test.ts).
    const asked = await convergeJobs(lrp);
    expect(asked.map((e) => e.fresh)).toEqual([true, false]);
    expect(asked[1]?.cause).toBe(`g${(await env.store.get(lrp.processGuid))?.generation}`);
  });

  it('leaves the image when the update has an empty or no image, and changes it otherwise', async () => {
    const lrp = newLrp();
    await desire(lrp);
    const image = async () =>
      (
        (await request(env.app).get(`/apps/${lrp.guid}/${lrp.version}`)).body as {
          desired_lrp: { image: string };
        }
      ).desired_lrp.image;

    let res = await request(env.app)
      .post(`/apps/${lrp.processGuid}`)
      .send(updateBody(lrp, { instances: 2, annotation: 'x1', image: '' }));
    expect(res.status).toBe(200);
    expect(await image()).toBe('registry.example.com/team/app:1');

    res = await request(env.app)
      .post(`/apps/${lrp.processGuid}`)
      .send(updateBody(lrp, { instances: 2, annotation: 'x2' }));
    expect(res.status).toBe(200);
    expect(await image()).toBe('registry.example.com/team/app:1');

    res = await request(env.app)
      .post(`/apps/${lrp.processGuid}`)
      .send(updateBody(lrp, { instances: 2, annotation: 'x2b', image: '   ' }));
    expect(res.status).toBe(200);
    expect(await image()).toBe('registry.example.com/team/app:1');

    res = await request(env.app)
      .post(`/apps/${lrp.processGuid}`)
      .send(updateBody(lrp, { instances: 2, annotation: 'x3', image: 'registry.example.com/team/app:2' }));
    expect(res.status).toBe(200);
    expect(await image()).toBe('registry.example.com/team/app:2');
  });

  it('answers 404 with an error body for an unknown LRP and records nothing', async () => {
    const lrp = newLrp();
    const before = await fingerprint(lrp);
    const res = await request(env.app)
      .post(`/apps/${lrp.processGuid}`)
      .send(updateBody(lrp, { instances: 1, annotation: 'a' }));
    expect(res.status).toBe(404);
    expectErrorBody(res.body, lrp.processGuid);
    expect(await fingerprint(lrp)).toEqual(before);
  });

  it('answers 404 for a stopped LRP', async () => {
    const lrp = newLrp();
    await desire(lrp);
    await request(env.app).put(`/apps/${lrp.guid}/${lrp.version}/stop`).expect(200);
    const res = await request(env.app)
      .post(`/apps/${lrp.processGuid}`)
      .send(updateBody(lrp, { instances: 1, annotation: 'a' }));
    expect(res.status).toBe(404);
    expectErrorBody(res.body, lrp.processGuid);
    expect(await schedulingInfoOf(lrp)).toBeUndefined();
  });
});

describe('GET /apps/:guid/:version', () => {
  it('answers 200 with the desired LRP', async () => {
    const lrp = newLrp();
    await desire(lrp, { instances: 3, last_updated: 'ünïcødé 1.50' });
    const res = await request(env.app).get(`/apps/${lrp.guid}/${lrp.version}`);
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      desired_lrp: {
        process_guid: lrp.processGuid,
        instances: 3,
        annotation: 'ünïcødé 1.50',
        image: 'registry.example.com/team/app:1',
      },
    });
  });

  it('answers 404 with an error body for an unknown LRP', async () => {
    const lrp = newLrp();
    const res = await request(env.app).get(`/apps/${lrp.guid}/${lrp.version}`);
    expect(res.status).toBe(404);
    expectErrorBody(res.body, lrp.processGuid);
  });

  it('answers 400 naming the guid for an invalid guid in the path', async () => {
    const res = await request(env.app).get(`/apps/bad_/${randomUUID()}`);
    expect(res.status).toBe(400);
    expectErrorBody(res.body, 'guid');
  });
});

describe('PUT /apps/:guid/:version/stop', () => {
  it('answers 200, removes the LRP from GET /apps and asks for a converge', async () => {
    const lrp = newLrp();
    await desire(lrp);
    const res = await request(env.app).put(`/apps/${lrp.guid}/${lrp.version}/stop`);
    expect(res.status).toBe(200);
    expect(res.body).toEqual({});
    expect(await schedulingInfoOf(lrp)).toBeUndefined();
    expect((await request(env.app).get(`/apps/${lrp.guid}/${lrp.version}`)).status).toBe(404);
    const rec = await env.store.get(lrp.processGuid);
    expect(rec?.state).toBe('stopped');
    expect((await convergeJobs(lrp)).map((e) => e.cause)).toEqual([
      expect.stringMatching(/^g\d+$/),
      `g${rec?.generation}`,
    ]);
  });

  it('answers 200 also for an LRP it never saw', async () => {
    const lrp = newLrp();
    const res = await request(env.app).put(`/apps/${lrp.guid}/${lrp.version}/stop`);
    expect(res.status).toBe(200);
    expect(res.body).toEqual({});
    expect(await schedulingInfoOf(lrp)).toBeUndefined();
  });

  it('answers 200 to a repeated stop', async () => {
    const lrp = newLrp();
    await desire(lrp);
    for (let i = 0; i < 2; i++) {
      expect((await request(env.app).put(`/apps/${lrp.guid}/${lrp.version}/stop`)).status).toBe(200);
    }
    expect(await schedulingInfoOf(lrp)).toBeUndefined();
  });
});

describe('PUT /apps/:guid/:version/stop/:index', () => {
  it('answers 200 for an index below instances (nothing to restart without a pod)', async () => {
    const lrp = newLrp();
    await desire(lrp, { instances: 2 });
    const before = await fingerprint(lrp);
    for (const index of ['0', '1']) {
      const res = await request(env.app).put(`/apps/${lrp.guid}/${lrp.version}/stop/${index}`);
      expect(res.status).toBe(200);
      expect(res.body).toEqual({});
    }
    expect(await fingerprint(lrp)).toEqual(before);
  });

  it('enqueues a stop-instance job for the pod that holds the index', async () => {
    const lrp = newLrp();
    await desire(lrp, { instances: 2 });
    await writeCache({
      [lrp.processGuid]: {
        instances: [
          { index: 0, podName: 'pod-a', sinceNs: '1589212345000000000', state: 'RUNNING' },
          { index: 1, podName: 'pod-b', sinceNs: '1589212346000000000', state: 'RUNNING' },
        ],
      },
    });
    const res = await request(env.app).put(`/apps/${lrp.guid}/${lrp.version}/stop/1`);
    expect(res.status).toBe(200);
    const jobs = (await env.producer.queues.lrp.getJobs(['wait'])).filter(
      (j) =>
        j.name === 'stop-instance' && (j.data as { processGuid?: string }).processGuid === lrp.processGuid,
    );
    expect(jobs.map((j): unknown => j.data)).toEqual([
      { processGuid: lrp.processGuid, index: 1, podName: 'pod-b' },
    ]);
  });

  it.each(['2', '3', '99999'])('answers 400 for index %s ≥ instances (2)', async (index) => {
    const lrp = newLrp();
    await desire(lrp, { instances: 2 });
    const before = await fingerprint(lrp);
    const res = await request(env.app).put(`/apps/${lrp.guid}/${lrp.version}/stop/${index}`);
    expect(res.status).toBe(400);
    expectErrorBody(res.body, 'index');
    expect(await fingerprint(lrp)).toEqual(before);
  });

  it('answers 400 for any index of an LRP with zero instances', async () => {
    const lrp = newLrp();
    await desire(lrp, { instances: 0 });
    const res = await request(env.app).put(`/apps/${lrp.guid}/${lrp.version}/stop/0`);
    expect(res.status).toBe(400);
    expectErrorBody(res.body, 'index');
  });

  it.each(['abc', '-1', '1.5', '1e2', '0x1', '123456', '%20'])(
    'answers 400 naming the index for the index %j',
    async (index) => {
      const lrp = newLrp();
      await desire(lrp, { instances: 2 });
      const before = await fingerprint(lrp);
      const res = await request(env.app).put(`/apps/${lrp.guid}/${lrp.version}/stop/${index}`);
      expect(res.status).toBe(400);
      expectErrorBody(res.body, 'index');
      expect(await fingerprint(lrp)).toEqual(before);
    },
  );

  it('answers 404 for an unknown LRP', async () => {
    const lrp = newLrp();
    const res = await request(env.app).put(`/apps/${lrp.guid}/${lrp.version}/stop/0`);
    expect(res.status).toBe(404);
    expectErrorBody(res.body, lrp.processGuid);
  });
});

describe('GET /apps/:guid/:version/instances', () => {
  it('answers 404 for an unknown LRP', async () => {
    const lrp = newLrp();
    const res = await request(env.app).get(`/apps/${lrp.guid}/${lrp.version}/instances`);
    expect(res.status).toBe(404);
    expect(res.body).toEqual({
      process_guid: lrp.processGuid,
      instances: [],
      error: expect.stringContaining(lrp.processGuid),
    });
    // CC's instances client takes a stopped process's answer as "no instances" only with these words.
    expect((res.body as { error: string }).error).toContain('not found');
  });

  it('lists every index as UNCLAIMED with since 0 before any sync', async () => {
    await env.redis.del(env.store.keys.syncMeta, env.store.keys.instances);
    const lrp = newLrp();
    await desire(lrp, { instances: 3 });
    const res = await request(env.app).get(`/apps/${lrp.guid}/${lrp.version}/instances`);
    expect(res.status).toBe(200);
    expect(res.headers['content-type']).toMatch(/^application\/json/);
    expect(res.headers['x-opi-cache-age-ms']).toBe('never-synced');
    expect(res.text).toBe(
      `{"process_guid":"${lrp.processGuid}","instances":[` +
        '{"index":0,"since":0,"state":"UNCLAIMED"},' +
        '{"index":1,"since":0,"state":"UNCLAIMED"},' +
        '{"index":2,"since":0,"state":"UNCLAIMED"}]}',
    );
  });

  it('answers an empty list for zero instances', async () => {
    const lrp = newLrp();
    await desire(lrp, { instances: 0 });
    const res = await request(env.app).get(`/apps/${lrp.guid}/${lrp.version}/instances`);
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ process_guid: lrp.processGuid, instances: [] });
  });

  it('keeps since exact in nanoseconds and fills missing indexes from the desired instances', async () => {
    const lrp = newLrp();
    await desire(lrp, { instances: 4 });
    const syncedAt = Date.now() - 60_000;
    await writeCache(
      {
        [lrp.processGuid]: {
          instances: [
            { index: 2, podName: 'pod-c', sinceNs: '1589212347000000001', state: 'CRASHED' },
            { index: 0, podName: 'pod-a', sinceNs: '1589212345123456789', state: 'RUNNING' },
            {
              index: 1,
              podName: 'pod-b',
              sinceNs: '0',
              state: 'UNCLAIMED',
              placementError: 'Insufficient resources: memory',
            },
          ],
        },
      },
      syncedAt,
    );
    const res = await request(env.app).get(`/apps/${lrp.guid}/${lrp.version}/instances`);
    expect(res.status).toBe(200);
    expect(res.text).toBe(
      `{"process_guid":"${lrp.processGuid}","instances":[` +
        '{"index":0,"since":1589212345123456789,"state":"RUNNING"},' +
        '{"index":1,"since":0,"state":"UNCLAIMED","placement_error":"Insufficient resources: memory"},' +
        '{"index":2,"since":1589212347000000001,"state":"CRASHED"},' +
        '{"index":3,"since":0,"state":"UNCLAIMED"}]}',
    );
    const age = res.headers['x-opi-cache-age-ms'];
    expect(age).toMatch(/^\d+$/);
    expect(Number(age)).toBeGreaterThanOrEqual(60_000);
  });

  it('lists the cached instances of an LRP that was stopped but still has pods', async () => {
    const lrp = newLrp();
    await desire(lrp, { instances: 1 });
    await writeCache({
      [lrp.processGuid]: {
        instances: [{ index: 0, podName: 'pod-a', sinceNs: '1589212345000000000', state: 'RUNNING' }],
      },
    });
    await request(env.app).put(`/apps/${lrp.guid}/${lrp.version}/stop`).expect(200);
    const res = await request(env.app).get(`/apps/${lrp.guid}/${lrp.version}/instances`);
    expect(res.status).toBe(200);
    expect(res.text).toBe(
      `{"process_guid":"${lrp.processGuid}","instances":[{"index":0,"since":1589212345000000000,"state":"RUNNING"}]}`,
    );
  });
});

// ---------------------------------------------------------------------------------------------------
// Bad input: refused with the contract's error body, nothing recorded or enqueued

describe('bad input', () => {
  async function expectNothingChanged(lrp: Lrp, send: () => Promise<request.Response>, status: number) {
    const before = await fingerprint(lrp);
    const res = await send();
    expect(res.status).toBe(status);
    expect(await fingerprint(lrp)).toEqual(before);
    expect(await env.redis.exists(env.store.keys.lrp(lrp.processGuid))).toBe(0);
    return res;
  }

  const put = (lrp: Lrp, app: Express = env.app) =>
    request(app).put(`/apps/${lrp.processGuid}`).set('Content-Type', 'application/json');

  it('answers 400 to malformed JSON', async () => {
    const lrp = newLrp();
    const res = await expectNothingChanged(lrp, () => put(lrp).send('{"guid": "a",'), 400);
    expectErrorBody(res.body, 'JSON');
  });

  it('answers 413 to a body over the limit', async () => {
    const lrp = newLrp();
    const body = desireBody(lrp, { environment: { BIG: 'x'.repeat(SMALL_BODY_LIMIT) } });
    const res = await expectNothingChanged(lrp, () => put(lrp, env.small).send(body), 413);
    expectErrorBody(res.body, String(SMALL_BODY_LIMIT));
  });

  it('accepts a body under the small limit on the same app', async () => {
    const lrp = newLrp();
    const res = await put(lrp, env.small).send(desireBody(lrp));
    expect(res.status).toBe(202);
  });

  it.each<[string, Record<string, unknown>, string]>([
    ['instances as a string', { instances: '2' }, 'instances'],
    ['memory_mb as a string', { memory_mb: '256' }, 'memory_mb'],
    ['ports as a number', { ports: 8080 }, 'ports'],
    ['environment as an array', { environment: [{ name: 'A', value: 'b' }] }, 'environment'],
    ['last_updated as a number', { last_updated: 1589212345.123456 }, 'last_updated'],
    ['missing memory_mb', { memory_mb: undefined }, 'memory_mb'],
    ['missing lifecycle', { lifecycle: undefined }, 'lifecycle'],
    ['missing guid', { guid: undefined }, 'guid'],
    ['disk_mb 0', { disk_mb: 0 }, 'disk_mb'],
    ['cpu_weight 101', { cpu_weight: 101 }, 'cpu_weight'],
    ['port 70000', { ports: [70000] }, 'ports.0'],
    ['a bad env var name', { environment: { 'BAD NAME': 'x' } }, 'environment.BAD NAME'],
    ['an unknown health_check_type', { health_check_type: 'tcp' }, 'health_check_type'],
    [
      'both lifecycles',
      {
        lifecycle: {
          docker_lifecycle: { image: 'a' },
          buildpack_lifecycle: { droplet_hash: 'ab', droplet_guid: 'd' },
        },
      },
      'lifecycle',
    ],
  ])('answers 400 naming the field for %s', async (_what, overrides, field) => {
    const lrp = newLrp();
    const res = await expectNothingChanged(lrp, () => put(lrp).send(desireBody(lrp, overrides)), 400);
    expectErrorBody(res.body, `${field}:`);
  });

  it('answers 400 when the path process_guid differs from the body', async () => {
    const lrp = newLrp();
    const other = newLrp();
    const res = await expectNothingChanged(
      lrp,
      () => request(env.app).put(`/apps/${lrp.processGuid}`).send(desireBody(other)),
      400,
    );
    expectErrorBody(res.body, 'process_guid');
    expect(await env.redis.exists(env.store.keys.lrp(other.processGuid))).toBe(0);
  });

  it('answers 400 when the body process_guid is not guid-version', async () => {
    const lrp = newLrp();
    const res = await expectNothingChanged(
      lrp,
      () => put(lrp).send(desireBody(lrp, { guid: randomUUID() })),
      400,
    );
    expectErrorBody(res.body, 'process_guid');
  });

  it('answers 400 to an update whose path differs from guid and version', async () => {
    const lrp = newLrp();
    await desire(lrp);
    const other = newLrp();
    const before = await fingerprint(lrp);
    const res = await request(env.app)
      .post(`/apps/${lrp.processGuid}`)
      .send(updateBody(other, { instances: 9, annotation: 'x' }));
    expect(res.status).toBe(400);
    expectErrorBody(res.body, 'process_guid');
    expect(await fingerprint(lrp)).toEqual(before);
  });

  it.each<[string, Record<string, unknown>, string]>([
    ['missing update', {}, 'update'],
    ['instances as a string', { update: { instances: '2', annotation: 'a' } }, 'update.instances'],
    ['negative instances', { update: { instances: -1, annotation: 'a' } }, 'update.instances'],
    ['missing annotation', { update: { instances: 1 } }, 'update.annotation'],
    ['image as a number', { update: { instances: 1, annotation: 'a', image: 1 } }, 'update.image'],
  ])('answers 400 to an update with %s, naming the field', async (_what, body, field) => {
    const lrp = newLrp();
    await desire(lrp);
    const before = await fingerprint(lrp);
    const res = await request(env.app)
      .post(`/apps/${lrp.processGuid}`)
      .send({ guid: lrp.guid, version: lrp.version, ...body });
    expect(res.status).toBe(400);
    expectErrorBody(res.body, `${field}:`);
    expect(await fingerprint(lrp)).toEqual(before);
  });

  it('answers 400 to an empty body', async () => {
    const lrp = newLrp();
    const res = await expectNothingChanged(lrp, () => put(lrp).send(''), 400);
    expectErrorBody(res.body);
  });

  it('answers 400 to a request without a body', async () => {
    const lrp = newLrp();
    const res = await expectNothingChanged(lrp, () => request(env.app).put(`/apps/${lrp.processGuid}`), 400);
    expectErrorBody(res.body);
  });

  it('answers 400 to an update without a body', async () => {
    const lrp = newLrp();
    await desire(lrp);
    const before = await fingerprint(lrp);
    const res = await request(env.app).post(`/apps/${lrp.processGuid}`);
    expect(res.status).toBe(400);
    expectErrorBody(res.body);
    expect(await fingerprint(lrp)).toEqual(before);
  });

  it.each<[string, string]>([
    ['a JSON array', '[]'],
    ['an array holding the body', JSON.stringify([{ guid: 'a' }])],
    ['null', 'null'],
    ['a string', '"body"'],
    ['a number', '42'],
    ['10,000 nested arrays', '['.repeat(10_000) + ']'.repeat(10_000)],
  ])('answers 400 naming the body to %s', async (_what, raw) => {
    const lrp = newLrp();
    const res = await expectNothingChanged(lrp, () => put(lrp).send(raw), 400);
    expectErrorBody(res.body, 'body');
  });

  it('answers 400 naming the field to 10,000 nested arrays in a field', async () => {
    const lrp = newLrp();
    const raw = JSON.stringify(desireBody(lrp, { ports: 'NESTED' })).replace(
      '"NESTED"',
      '['.repeat(10_000) + ']'.repeat(10_000),
    );
    const res = await expectNothingChanged(lrp, () => put(lrp).send(raw), 400);
    expectErrorBody(res.body, 'ports');
  });

  it('accepts 10,000 nested arrays in a field it ignores', async () => {
    const lrp = newLrp();
    const raw = JSON.stringify(desireBody(lrp, { log_guid: 'NESTED' })).replace(
      '"NESTED"',
      '['.repeat(10_000) + ']'.repeat(10_000),
    );
    const res = await put(lrp).send(raw);
    expect(res.status).toBe(202);
  });

  it('answers 400 to 30,000 nested arrays just under the body limit', async () => {
    const lrp = newLrp();
    const raw = '['.repeat(30_000) + ']'.repeat(30_000);
    expect(raw.length).toBeLessThan(BODY_LIMIT);
    const res = await expectNothingChanged(lrp, () => put(lrp).send(raw), 400);
    expectErrorBody(res.body, 'body');
  });

  it('answers 413 or 400, never 500, to 100,000 nested arrays', async () => {
    const lrp = newLrp();
    const raw = '['.repeat(100_000) + ']'.repeat(100_000);
    const before = await fingerprint(lrp);
    const res = await put(lrp).send(raw);
    expect([400, 413]).toContain(res.status);
    expectErrorBody(res.body);
    expect(await fingerprint(lrp)).toEqual(before);
  });

  it.each<[string, string]>([
    ['GET', '/nope'],
    ['GET', '/apps/a/b/c/d'],
    ['DELETE', `/apps/${randomUUID()}-${randomUUID()}`],
    ['PATCH', '/apps'],
    ['GET', '/tasks-not-here'],
  ])('answers 404 with an error body to %s %s', async (method, path) => {
    const before = await fingerprint();
    const res = await request(env.app)[method.toLowerCase() as 'get' | 'delete' | 'patch'](path);
    expect(res.status).toBe(404);
    expectErrorBody(res.body, method, path);
    expect(await fingerprint()).toEqual(before);
  });
});

// ---------------------------------------------------------------------------------------------------
// Redis unreachable

describe('when Redis is unreachable', () => {
  let down: Express;
  let deadRedis: Redis;
  let deadProducer: JobProducer;

  beforeAll(() => {
    // The API's own connection settings; only the teardown is shortened: ioredis keeps a timer for
    // disconnectTimeout (2 s) after disconnecting a socket that never connected.
    deadRedis = producerConnection('redis://127.0.0.1:1', { disconnectTimeout: 10 });
    deadRedis.on('error', () => {
      // Expected: nothing listens there.
    });
    deadProducer = new JobProducer({ connection: deadRedis, prefix: `${PREFIX}-down`, attempts: 1 });
    for (const q of Object.values(deadProducer.queues)) {
      q.on('error', () => {
        // Expected, as above.
      });
    }
    down = createApp({
      store: new StateStore(deadRedis, `${PREFIX}-down`),
      tasks: new TaskStore(deadRedis, `${PREFIX}-down`),
      producer: deadProducer,
      logger,
      bodyLimitBytes: BODY_LIMIT,
      defaults: DEFAULTS,
    });
  });

  afterAll(async () => {
    await deadProducer.close();
    deadRedis.disconnect();
  });

  const lrp = newLrp();
  it.each<[string, () => request.Test]>([
    ['GET /apps', () => request(down).get('/apps')],
    ['PUT /apps/:process_guid', () => request(down).put(`/apps/${lrp.processGuid}`).send(desireBody(lrp))],
    [
      'POST /apps/:process_guid',
      () =>
        request(down)
          .post(`/apps/${lrp.processGuid}`)
          .send(updateBody(lrp, { instances: 1, annotation: 'a' })),
    ],
    ['GET /apps/:guid/:version', () => request(down).get(`/apps/${lrp.guid}/${lrp.version}`)],
    ['PUT /apps/:guid/:version/stop', () => request(down).put(`/apps/${lrp.guid}/${lrp.version}/stop`)],
    [
      'GET /apps/:guid/:version/instances',
      () => request(down).get(`/apps/${lrp.guid}/${lrp.version}/instances`),
    ],
  ])('%s answers 503 with Retry-After', async (route, send) => {
    const res = await send();
    expect(res.status).toBe(503);
    expect(res.headers['retry-after']).toMatch(/^\d+$/);
    if (route.endsWith('/instances')) {
      // The instances client's shape: `error` a string, and no "not found" in it (CC must not read
      // "no instances" while the state is unknown).
      expect(res.body).toEqual({ instances: [], error: expect.stringContaining('unavailable') });
      expect((res.body as { error: string }).error).not.toContain('not found');
    } else expectErrorBody(res.body, 'unavailable');
  });

  // With Redis down, "no record" would be a wrong 404 (CC would tell the user the app does not exist).
  it('PUT /apps/:guid/:version/stop/:index answers 503 with Retry-After', async () => {
    const res = await request(down).put(`/apps/${lrp.guid}/${lrp.version}/stop/0`);
    expect(res.status).toBe(503);
    expect(res.headers['retry-after']).toMatch(/^\d+$/);
    expectErrorBody(res.body, 'unavailable');
  });

  it('still refuses bad input with 400 without touching Redis', async () => {
    const res = await request(down)
      .put(`/apps/${lrp.processGuid}`)
      .send(desireBody(lrp, { disk_mb: 0 }));
    expect(res.status).toBe(400);
    expectErrorBody(res.body, 'disk_mb');
  });
});
