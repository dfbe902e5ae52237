/**
 * Generations after Redis lost everything (found by the chaos suite): the counter restarted at 1, so a
 * re-desired LRP got a generation already stamped on its Deployment by an older spec, and converge and
 * sync took that Deployment for up to date: the app kept its old instances and image for good.
 */
import { randomUUID } from 'node:crypto';
import type { Redis } from 'ioredis';
import { JobProducer, workerConnection } from '@opi/queue';
import { workloadName } from '@opi/translation';
import { convergeLrp } from '../../../apps/worker/src/index.js';
import { sampleLrp } from '../../../libs/translation/src/lrp.fixture.js';
import { NS, type SimCluster, handlerDeps, startSimCluster } from '../../support/handler-deps.js';
import { deletePrefix } from '../../support/redis-keys.js';

describe('a Redis flush between two desires of one LRP', () => {
  let redis: Redis;
  const prefix = `test-flush-gen-${randomUUID().slice(0, 8)}`;
  let producer: JobProducer;
  let cluster: SimCluster;

  const flush = async () => {
    await deletePrefix(redis, prefix);
  };

  beforeAll(async () => {
    redis = workerConnection(process.env['REDIS_URL'] ?? 'redis://127.0.0.1:6379');
    producer = new JobProducer({ connection: redis, prefix, attempts: 2 });
    cluster = await startSimCluster();
  });
  afterAll(async () => {
    for (const q of Object.values(producer.queues)) await q.obliterate({ force: true });
    await producer.close();
    await flush();
    await redis.quit();
    await cluster.close();
  });

  it('hands out generations above those from before, and the new spec reaches the Deployment', async () => {
    const kube = cluster.kube;
    const deps = handlerDeps(redis, prefix, kube, producer);
    const store = deps.store;
    const guid = randomUUID();
    const version = randomUUID();
    const before = sampleLrp({ processGuid: `${guid}-${version}`, guid, version, instances: 2 });
    const first = await store.desire(before);
    await convergeLrp(deps, before.processGuid);

    await flush();
    // CC finds it missing from GET /apps and desires it again, as it now wants it.
    const after = { ...before, instances: 3, image: 'registry.example/app:2', annotation: 'later' };
    const second = await store.desire(after);
    expect(second.generation).toBeGreaterThan(first.generation);
    await convergeLrp(deps, after.processGuid);
    const d = await kube.deployments.get(NS, workloadName(after));
    expect(d?.spec?.replicas).toBe(3);
    expect(d?.spec?.template.spec?.containers[0]?.image).toBe('registry.example/app:2');
  });
});
