/**
 * The service on a real Redis Cluster (three masters on loopback) with the prefix `{opi}`: the API and a
 * worker in-process, the simulated cluster, BullMQ's scripts and ours all on one slot. Then the state
 * stores' every multi-key script, MULTI and pipeline run on the Cluster directly, and a master found
 * through Sentinel serves the same.
 */
import { createHash, randomUUID } from 'node:crypto';
import { type Cluster, Redis } from 'ioredis';
import { SettingsError, hashTag, parseSettings } from '@opi/config';
import { JobProducer, createRedis, producerConnection } from '@opi/queue';
import { CacheWriter, StateStore, TaskStore } from '@opi/state';
import { desireBody, taskBody, uuid } from '@opi/contract/testing';
import * as SCRIPTS from '../../../libs/state/src/scripts.js';
import { sampleLrp } from '../../../libs/translation/src/lrp.fixture.js';
import { sampleStaging, sampleTask } from '../../../libs/translation/src/job.fixture.js';
import { type FakeCc, startFakeCc } from '../../support/fake-cc.js';
import {
  type RedisTopology,
  redisToolsInstalled,
  startRedisCluster,
  startRedisSentinel,
} from '../../support/redis-cluster.js';
import { type Service, call, deployedGuids, eventually, startService } from '../../support/service.js';

const PREFIX = '{opi}';

const haveRedis = await redisToolsInstalled();
if (!haveRedis) process.stdout.write('redis-server/redis-cli not installed: Redis Cluster tests skipped\n');
const describeWithRedis = haveRedis ? describe : describe.skip;

/** Every key of every master, with the node that holds it. */
async function keysByNode(redis: Cluster): Promise<Map<string, string>> {
  const out = new Map<string, string>();
  for (const node of redis.nodes('master')) {
    let cursor = '0';
    do {
      const [next, keys] = await node.scan(cursor, 'COUNT', 1000);
      cursor = next;
      for (const k of keys) out.set(k, `${node.options.host ?? ''}:${node.options.port ?? 0}`);
    } while (cursor !== '0');
  }
  return out;
}

function sha1(text: string): string {
  return createHash('sha1').update(text).digest('hex');
}

describeWithRedis('on a Redis Cluster with the prefix {opi}', () => {
  let cluster: RedisTopology;
  let cc: FakeCc;
  let s: Service;
  let redis: Cluster;

  beforeAll(async () => {
    cluster = await startRedisCluster(3);
    cc = await startFakeCc();
    s = await startService({
      workers: 1,
      env: {
        REDIS_CLUSTER_NODES: cluster.nodes.map((n) => `${n.host}:${n.port}`).join(','),
        OPI_QUEUE_PREFIX: PREFIX,
        // As k8s/ runs it: the sync stays in OPI_NAMESPACE.
        OPI_SYNC_ALL_NAMESPACES: 'false',
        CC_INTERNAL_URL: cc.url,
        OPI_CALLBACK_BACKOFF_MS: '200',
      },
    });
    redis = createRedis(s.settings.redis) as Cluster;
  }, 120_000);

  afterAll(async () => {
    redis?.disconnect();
    await s?.close();
    await cc?.close();
    await cluster?.close();
  });

  it('refuses a Cluster without a hash-tagged prefix, before connecting', () => {
    const env = { REDIS_CLUSTER_NODES: '127.0.0.1:7000' };
    expect(() => parseSettings({ ...env, OPI_QUEUE_PREFIX: 'opi' })).toThrow(SettingsError);
    expect(parseSettings({ ...env, OPI_QUEUE_PREFIX: PREFIX }).redis.clusterNodes).toHaveLength(1);
  });

  it('connects to the Cluster (three masters), not to a single node', async () => {
    expect(s.settings.redis.clusterNodes).toHaveLength(3);
    await eventually(async () => redis.status === 'ready', 'the cluster connection');
    expect(redis.nodes('master')).toHaveLength(3);
  });

  it('runs an LRP end to end: desire, Deployment, GET /apps, instances, scale, stop', async () => {
    const guid = uuid(1, 'cluster');
    const version = uuid(1, 'v1');
    const pg = `${guid}-${version}`;
    expect((await call(s.base, 'PUT', `/apps/${pg}`, desireBody(guid, version))).status).toBe(202);

    await eventually(async () => (await deployedGuids(s)).get(pg) === 1, 'the Deployment');
    const apps = await call(s.base, 'GET', '/apps');
    expect(apps.status).toBe(200);
    expect(JSON.parse(apps.text)).toMatchObject({
      desired_lrp_scheduling_infos: [
        { desired_lrp_key: { process_guid: pg }, annotation: '1589212345.000001' },
      ],
    });

    // The sync's cache (a MULTI swap) reports the running pod.
    await eventually(async () => {
      const r = await call(s.base, 'GET', `/apps/${guid}/${version}/instances`);
      const body = JSON.parse(r.text) as { instances?: { state: string }[] };
      return r.status === 200 && body.instances?.[0]?.state === 'RUNNING';
    }, 'a RUNNING instance');

    const update = { guid, version, update: { instances: 2, annotation: '1589212346.000002' } };
    expect((await call(s.base, 'POST', `/apps/${pg}`, update)).status).toBe(200);
    await eventually(async () => (await deployedGuids(s)).get(pg) === 2, 'two replicas');

    expect((await call(s.base, 'PUT', `/apps/${guid}/${version}/stop`)).status).toBe(200);
    await eventually(async () => !(await deployedGuids(s)).has(pg), 'the Deployment gone');
    await eventually(async () => {
      const r = await call(s.base, 'GET', '/apps');
      return !r.text.includes(pg);
    }, 'GET /apps without the LRP');
  });

  it('runs a task as a Job and tells CC once', async () => {
    const g = randomUUID();
    expect((await call(s.base, 'POST', `/tasks/${g}`, taskBody(cc.url, g))).status).toBe(202);
    expect((await call(s.base, 'GET', `/tasks/${g}`)).status).toBe(200);
    const done = await eventually(
      async () => cc.callsTo(`/internal/v4/tasks/${g}/completed`).find((c) => c.status === 200),
      'the completion callback',
    );
    expect(done.body).toMatchObject({ task_guid: g, failed: false });
    await eventually(
      async () => (await call(s.base, 'GET', `/tasks/${g}`)).status === 404,
      'the task reported',
    );
  });

  it('keeps every key, BullMQ’s and ours, under {opi} in one slot', async () => {
    const keys = await keysByNode(redis);
    expect(keys.size).toBeGreaterThan(5);
    expect([...keys.keys()].filter((k) => hashTag(k) !== 'opi')).toEqual([]);
    expect(new Set(keys.values()).size).toBe(1);
    expect([...keys.keys()].some((k) => k.startsWith(`${PREFIX}:lrp:`))).toBe(true);
    expect([...keys.keys()].some((k) => k.startsWith(`${PREFIX}:state:`))).toBe(true);
  });

  describe('libs/state on the Cluster, call by call', () => {
    const prefix = '{opi-state}';
    let store: StateStore;
    let tasks: TaskStore;

    beforeAll(() => {
      store = new StateStore(redis, prefix);
      tasks = new TaskStore(redis, prefix);
    });

    it('runs every multi-key script, MULTI and pipeline on one slot', async () => {
      const a = sampleLrp({ processGuid: 'pg-a', instances: 1 });
      const b = sampleLrp({ processGuid: 'pg-b', instances: 1 });
      // CAS_RECORD (record, set, hash): desire, update, stop, adopt.
      expect((await store.desire(a)).changed).toBe(true);
      expect(await store.update('pg-a', { instances: 2, annotation: '2' })).toMatchObject({
        lrp: { instances: 2 },
      });
      expect(await store.adopt(b)).toBe(true);
      const stopped = await store.stop('pg-b', b.guid, b.version);
      // RECORD_SUMMARIES over several records.
      const states: string[] = [];
      for await (const chunk of store.recordSummaries()) states.push(...chunk.map((r) => r.processGuid));
      expect(states.sort()).toEqual(['pg-a', 'pg-b']);
      // LIST_STOPPED_WHILE_PRESENT (hash plus one record per change).
      await store.listStoppedWhilePresent(new Map([['pg-b', '{"old":true}']]), []);
      expect((await store.schedulingInfos()).entries).toContain('{"old":true}');
      await store.listStoppedWhilePresent(new Map(), ['pg-b']);
      expect((await store.schedulingInfos()).entries).not.toContain('{"old":true}');
      // EXPIRE_IF_UNCHANGED.
      await store.confirmStopped('pg-b', stopped.generation);
      expect(await redis.ttl(store.keys.lrp('pg-b'))).toBeGreaterThan(0);
      // The cache writer's fenced scripts: claim, hash writes, a snapshot renamed over the hash.
      const cached = { instances: [{ index: 0, podName: 'web-0', sinceNs: '0', state: 'RUNNING' }] };
      const writer = new CacheWriter(redis, prefix);
      await writer.claim(1);
      await writer.putInstances(1, [['pg-x', '{}']]);
      const snapshot = writer.snapshot(1);
      await snapshot.add('pg-a', JSON.stringify(cached));
      await snapshot.commit({ syncedAt: '1' });
      // Pipeline of GETs and HGETs; the refusal scripts.
      const gen = (await store.get('pg-a'))?.generation ?? 0;
      expect(await store.recordRefusal('pg-a', { generation: gen, reason: 'invalid', message: 'no' })).toBe(
        true,
      );
      expect(await store.lrpWithInstances('pg-a')).toMatchObject({
        record: { state: 'desired' },
        cached,
        refusal: { generation: gen, message: 'no' },
      });
      await store.clearRefusal('pg-a', gen);
      expect(await redis.exists(store.keys.refusal('pg-a'))).toBe(0);
      // SET NX, the compare-and-extend script (a third of the lifetime in), then the compare-and-delete.
      const release = await store.tryLockSync('me', 300);
      expect(release).toBeDefined();
      await new Promise((r) => setTimeout(r, 400));
      expect(await redis.get(store.keys.syncLock)).toBe('me');
      await release?.();
      expect(await redis.exists(store.keys.syncLock)).toBe(0);

      // CAS_WITH_SET (record, set), with and without an expiry.
      const task = sampleTask();
      expect(await tasks.createTask(task)).toBe(true);
      expect(await tasks.unreportedTaskGuids()).toEqual([task.taskGuid]);
      expect(await tasks.cancelTask(task.taskGuid)).toMatchObject({ cancelled: true });
      await tasks.markTaskReported(task.taskGuid);
      expect(await tasks.unreportedTaskGuids()).toEqual([]);
      const staging = sampleStaging();
      expect(await tasks.createStaging(staging)).toBe(true);
      await tasks.markStagingReported(staging.stagingGuid);

      // Every script of scripts.ts ran on the Cluster (a script run by EVAL or loaded after NOSCRIPT is cached on the node it ran on).
      const scripts = Object.entries(SCRIPTS).flatMap(([name, v]): [string, string][] =>
        typeof v === 'string' ? [[name, v]] : [],
      );
      const shas = scripts.map(([, lua]) => sha1(lua));
      const exists = await Promise.all(
        redis.nodes('master').map((n) => n.script('EXISTS', ...shas) as Promise<number[]>),
      );
      const ran = shas.map((_, i) => exists.some((perNode) => perNode[i] === 1));
      expect(Object.fromEntries(scripts.map(([name], i) => [name, ran[i]]))).toEqual(
        Object.fromEntries(scripts.map(([name]) => [name, true])),
      );
    });

    it('fails without the hash tag (CROSSSLOT): the check above means something', async () => {
      const untagged = new StateStore(redis, 'opi-untagged');
      await expect(untagged.desire(sampleLrp({ processGuid: 'pg-x' }))).rejects.toThrow(/CROSSSLOT/);
    });
  });
});

describeWithRedis('through Redis Sentinel', () => {
  let sentinel: RedisTopology & { master: { host: string; port: number } };

  beforeAll(async () => {
    sentinel = await startRedisSentinel('opi');
  }, 60_000);
  afterAll(async () => {
    await sentinel?.close();
  });

  it('finds the master by name and serves the stores and the queues there', async () => {
    const settings = parseSettings({
      REDIS_SENTINELS: sentinel.nodes.map((n) => `${n.host}:${n.port}`).join(','),
      REDIS_SENTINEL_NAME: 'opi',
      OPI_QUEUE_PREFIX: PREFIX,
    });
    const conn = producerConnection(settings.redis);
    const master = new Redis(sentinel.master.port, sentinel.master.host);
    try {
      await eventually(async () => conn.status === 'ready', 'the sentinel-managed connection');
      const store = new StateStore(conn, PREFIX);
      expect((await store.desire(sampleLrp({ processGuid: 'pg-s' }))).changed).toBe(true);
      const producer = new JobProducer({ connection: conn, prefix: PREFIX, attempts: 1 });
      await producer.convergeLrp({ processGuid: 'pg-s' }, 'test');
      await producer.close();
      // Both landed on the master the sentinel named.
      expect(await master.exists(`${PREFIX}:state:lrp:pg-s`)).toBe(1);
      expect((await master.keys(`${PREFIX}:lrp:*`)).length).toBeGreaterThan(0);
    } finally {
      conn.disconnect();
      master.disconnect();
    }
  });
});
