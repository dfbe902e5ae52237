/**
 * A task's completion reaches CC once even when marking it reported fails after CC took it (found by the
 * chaos suite: a cluster answering 5xx to the Job's annotation failed the report job, and its retry
 * posted the completion a second time), and a task still running when Redis was flushed is listed again
 * (it vanished from GET /tasks until its Job ended), and a worker killed after CC's answer while Redis was
 * restarting leaves the report remembered on the Job (also found by the chaos suite). Real Redis, the
 * client-node adapter against the simulated cluster (its calls failed or hung with `withFaults`), a fake CC.
 */
import { randomUUID } from 'node:crypto';
import type { Redis } from 'ioredis';
import { JobProducer, workerConnection } from '@opi/queue';
import { TaskStore } from '@opi/state';
import { ANNOTATION_REPORTED_AT, taskJobName, taskToJob } from '@opi/translation';
import type { HandlerDeps } from '../../../apps/worker/src/index.js';
import { syncJobs } from '../../../apps/worker/src/handlers/sync-jobs.js';
import { reportTask } from '../../../apps/worker/src/handlers/tasks.js';
import { sampleTask } from '../../../libs/translation/src/job.fixture.js';
import { type FakeCc, startFakeCc } from '../../support/fake-cc.js';
import {
  NS,
  type SimCluster,
  type TestKube,
  handlerDeps,
  startSimCluster,
} from '../../support/handler-deps.js';
import { deletePrefix } from '../../support/redis-keys.js';

describe('task reports and records under faults', () => {
  let redis: Redis;
  let cc: FakeCc;
  let producer: JobProducer;
  const prefix = `test-report-once-${randomUUID().slice(0, 8)}`;
  const clusters: SimCluster[] = [];

  beforeAll(async () => {
    redis = workerConnection(process.env['REDIS_URL'] ?? 'redis://127.0.0.1:6379');
    cc = await startFakeCc({ rejectRepeats: true });
    producer = new JobProducer({ connection: redis, prefix, attempts: 2 });
  });
  afterAll(async () => {
    for (const q of Object.values(producer.queues)) await q.obliterate({ force: true });
    await producer.close();
    await deletePrefix(redis, prefix);
    await redis.quit();
    await cc.close();
    for (const c of clusters) await c.close();
  });

  /** A cluster of its own holding the task's Job, and the task's record, finished, in Redis. */
  async function setUp(): Promise<{ kube: TestKube; deps: HandlerDeps; guid: string }> {
    const cluster = await startSimCluster();
    clusters.push(cluster);
    const kube = cluster.kube;
    const guid = randomUUID();
    const task = sampleTask({
      taskGuid: guid,
      completionCallback: `${cc.url}/internal/v4/tasks/${guid}/completed`,
    });
    await kube.jobs.create(NS, taskToJob(task, { runAsNonRoot: true }));
    const deps = handlerDeps(redis, prefix, kube, producer);
    await deps.tasks.createTask(task);
    await deps.tasks.setTaskOutcome(guid, { failed: false, failureReason: '' });
    return { kube, deps, guid };
  }

  /** Redis loses the task's record; then the sync runs over the Jobs, as the cache writer's watch holds them. */
  async function flushThenSync(deps: HandlerDeps, kube: TestKube, guid: string): Promise<void> {
    await redis.del(deps.tasks.keys.task(guid));
    await redis.srem(deps.tasks.keys.tasks, guid);
    const jobs = (await kube.jobs.list(undefined)).items;
    await syncJobs(deps, {
      workloads: () => [],
      jobs: () => jobs,
      podsOfJob: () => [],
      rewriteInstances: () => Promise.resolve({ pods: 0 }),
    });
  }

  it('retries marking the Job instead of posting again, and a re-run does not post', async () => {
    const { kube, deps, guid } = await setUp();
    // Its Job's annotation fails twice, as a cluster answering 503 would.
    const marks = kube.faults.inject({ resource: 'jobs', verb: 'annotate', times: 2 });
    await expect(reportTask(deps, guid)).resolves.toMatchObject({ kind: 'delivered' });
    expect(marks.fired).toBe(2);
    // A second run of the job (a retry, or another worker taking it over) finds it reported.
    await expect(reportTask(deps, guid)).resolves.toEqual({ kind: 'skipped', why: 'already reported' });
    expect(cc.callsTo(`/internal/v4/tasks/${guid}/`)).toHaveLength(1);
    expect(
      (await kube.jobs.get(NS, taskJobName(guid)))?.metadata.annotations?.[ANNOTATION_REPORTED_AT],
    ).toBeTruthy();
    expect((await deps.tasks.getTask(guid))?.reported).toBe(true);
    expect(await deps.tasks.unreportedTaskGuids()).not.toContain(guid);
  });

  it('reads the Job again in place when the cluster blips, so the attempt is not used up', async () => {
    const { kube, deps, guid } = await setUp();
    const reads = kube.faults.inject({ resource: 'jobs', verb: 'get', times: 2 });
    await expect(reportTask(deps, guid)).resolves.toMatchObject({ kind: 'delivered' });
    expect(reads).toMatchObject({ fired: 2, remaining: 0 });
    expect(cc.callsTo(`/internal/v4/tasks/${guid}/`)).toHaveLength(1);
  });

  it('a worker that dies after CC took the report, with Redis unreachable, leaves the mark on the Job', async () => {
    const { kube, deps, guid } = await setUp();
    // Redis goes away just after the post: marking the record waits (ioredis queues it) until the worker
    // is killed. The Job's mark is written meanwhile.
    class Unreachable extends TaskStore {
      override markTaskReported(): Promise<void> {
        return new Promise(() => undefined);
      }
    }
    const dying = { ...deps, tasks: new Unreachable(redis, prefix) };
    void reportTask(dying, guid);
    for (let i = 0; i < 100 && cc.callsTo(`/internal/v4/tasks/${guid}/`).length === 0; i++) {
      await new Promise((r) => setTimeout(r, 20));
    }
    const job = taskJobName(guid);
    for (
      let i = 0;
      i < 100 && !(await kube.jobs.get(NS, job))?.metadata.annotations?.[ANNOTATION_REPORTED_AT];
      i++
    ) {
      await new Promise((r) => setTimeout(r, 20));
    }
    expect((await deps.tasks.getTask(guid))?.reported).toBe(false);

    // Its job stalls and another worker, Redis back, runs it: the Job says reported, so no second post.
    await expect(reportTask(deps, guid)).resolves.toEqual({
      kind: 'skipped',
      why: 'already reported (its Job says so)',
    });
    expect(cc.callsTo(`/internal/v4/tasks/${guid}/`)).toHaveLength(1);
    expect((await deps.tasks.getTask(guid))?.reported).toBe(true);
    expect(await deps.tasks.unreportedTaskGuids()).not.toContain(guid);
  });

  it('a worker that dies after marking the record but before the Job leaves its retry to mark the Job, so a later Redis flush does not post again', async () => {
    const { kube, deps, guid } = await setUp();
    // The Job's mark never lands: the worker is killed while the cluster is slow to answer.
    const hang = kube.faults.inject({ resource: 'jobs', verb: 'annotate', when: 'hang', times: Infinity });
    void reportTask(deps, guid);
    for (let i = 0; i < 100 && !(await deps.tasks.getTask(guid))?.reported; i++) {
      await new Promise((r) => setTimeout(r, 20));
    }
    expect(cc.callsTo(`/internal/v4/tasks/${guid}/`)).toHaveLength(1);
    expect(
      (await kube.jobs.get(NS, taskJobName(guid)))?.metadata.annotations?.[ANNOTATION_REPORTED_AT],
    ).toBeUndefined();

    hang.remove();
    // The job stalls and another worker runs it: the record says reported, and the Job is marked now.
    await expect(reportTask(deps, guid)).resolves.toEqual({
      kind: 'skipped',
      why: 'already reported (its Job marked now)',
    });
    expect(
      (await kube.jobs.get(NS, taskJobName(guid)))?.metadata.annotations?.[ANNOTATION_REPORTED_AT],
    ).toBeTruthy();

    // Redis loses everything: the sync sees a reported Job, rebuilds nothing and posts nothing.
    await flushThenSync(deps, kube, guid);
    expect(await deps.tasks.getTask(guid)).toBeUndefined();
    expect(cc.callsTo(`/internal/v4/tasks/${guid}/`)).toHaveLength(1);
  });

  it('after a Redis flush, the sync rebuilds a running task from its Job, so GET /tasks lists it again', async () => {
    const { kube, deps, guid } = await setUp();
    await flushThenSync(deps, kube, guid);
    expect(await deps.tasks.unreportedTaskGuids()).toContain(guid);
    const rec = await deps.tasks.getTask(guid);
    expect(rec?.task.completionCallback).toBe(`${cc.url}/internal/v4/tasks/${guid}/completed`);
    expect(rec?.outcome).toBeUndefined();
    expect(cc.callsTo(`/internal/v4/tasks/${guid}/`)).toHaveLength(0);
  });
});
