/**
 * The workers dispatching jobs through BullMQ to the handlers, with the client-node adapter against the
 * simulated cluster: completed jobs, permanent and transient failures (`withFaults`), bad payloads,
 * which queues a worker set serves, and a report retried until its window ends.
 */
import type { Job } from 'bullmq';
import { pino } from 'pino';
import type { DesiredLrp } from '@opi/domain';
import type { FaultRule } from '@opi/kube/testing';
import { QUEUE_NAMES, jobId } from '@opi/queue';
import { ccCrashReport } from '../../support/crash-report.js';
import { type FakeCc, startFakeCc } from '../../support/fake-cc.js';
import { type RunningWorkers, startWorkers } from '../../../apps/worker/src/index.js';
import { eventually } from '../../support/eventually.js';
import {
  type Env,
  deploymentOf,
  desireAndConverge,
  handlerSuite,
  invalidError,
  names,
  newLrp,
  seedPod,
} from '../../support/handler-deps.js';
import { pod } from '../../support/handler-sync.js';
import { TASK_GUID, sampleTask } from '../../../libs/translation/src/job.fixture.js';

const suite = handlerSuite('workers-dispatch');

describe('workers: dispatch through BullMQ', () => {
  let e: Env;
  let running: RunningWorkers;

  beforeEach(async () => {
    e = await suite.newEnv();
    running = startWorkers(e.deps, {
      connection: suite.redis,
      prefix: e.prefix,
      concurrency: 2,
      lockMs: 30_000,
      callbackRetry: { firstDelayMs: 50, maxDelayMs: 1000, windowMs: 60_000 },
    });
  });

  afterEach(async () => {
    await running.close(5000);
  });

  /** Waits until the job reaches one of the final states, and returns it (read after) with that state. */
  async function finished(id: string): Promise<{ job: Job; state: string }> {
    const queue = e.producer.queues[QUEUE_NAMES.lrp];
    return eventually(
      async () => {
        const state = await queue.getJobState(id);
        if (state !== 'completed' && state !== 'failed') return undefined;
        const job = await queue.getJob(id);
        return job ? { job, state } : undefined;
      },
      `job ${id} to finish`,
      20_000,
    );
  }

  /** Desires the LRP and queues its converge, its Deployment's create failing as `fault` says. */
  async function convergeJob(lrp: DesiredLrp, fault?: Pick<FaultRule, 'when' | 'times' | 'error'>) {
    const { generation } = await e.store.desire(lrp);
    if (fault) e.kube.faults.inject({ resource: 'deployments', verb: 'create', ...fault });
    const cause = `gen${generation}`;
    await e.producer.convergeLrp({ processGuid: lrp.processGuid }, cause);
    return `converge-${lrp.processGuid}-${cause}`;
  }

  it('completes a converge job', async () => {
    const lrp = newLrp();
    const { job, state } = await finished(await convergeJob(lrp));
    expect(state).toBe('completed');
    expect(job.returnvalue).toMatch(/^created deployment/);
    expect(await deploymentOf(e, lrp)).toBeDefined();
  });

  it('fails a job at once on a permanent error, keeping the reason', async () => {
    const lrp = newLrp();
    const { job, state } = await finished(await convergeJob(lrp, { error: invalidError }));
    expect(state).toBe('failed');
    expect(job.attemptsMade).toBe(1);
    expect(job.failedReason).toMatch(/^kubernetes refused: 422 Invalid: .*injected fault/);
    expect(await deploymentOf(e, lrp)).toBeUndefined();
  });

  it("stores a permanent refusal for /instances with the record's generation; the next success clears it", async () => {
    const lines: Record<string, unknown>[] = [];
    e.deps.logger = pino(
      { level: 'info' },
      { write: (l: string) => lines.push(JSON.parse(l) as Record<string, unknown>) },
    );
    const lrp = newLrp();
    const id = await convergeJob(lrp, { error: invalidError });
    expect((await finished(id)).state).toBe('failed');
    await eventually(async () => lines.some((l) => l['msg'] === 'job failed'), 'the job failed line');
    expect(lines.find((l) => l['msg'] === 'job failed')).toMatchObject({
      level: 40,
      processGuid: lrp.processGuid,
      refused: 'invalid',
    });
    const { record, refusal } = await e.store.lrpWithInstances(lrp.processGuid);
    expect(refusal).toEqual({
      generation: record?.generation,
      reason: 'invalid',
      message: expect.stringMatching(
        /^Kubernetes refused the app \(422 Invalid\): .*injected fault/,
      ) as string,
    });

    e.kube.faults.clear();
    await e.producer.convergeLrp({ processGuid: lrp.processGuid }, 'again');
    expect((await finished(`converge-${lrp.processGuid}-again`)).state).toBe('completed');
    expect((await e.store.lrpWithInstances(lrp.processGuid)).refusal).toBeUndefined();
  });

  it('retries a job after a transient error, which then converges', async () => {
    const lrp = newLrp();
    const { job, state } = await finished(await convergeJob(lrp, {}));
    expect(state).toBe('completed');
    expect(job.attemptsMade).toBe(2);
    expect(await deploymentOf(e, lrp)).toBeDefined();
  });

  it('fails a job whose transient error outlasts its attempts, keeping the reason', async () => {
    const lrp = newLrp();
    const { job, state } = await finished(await convergeJob(lrp, { times: Infinity }));
    expect(state).toBe('failed');
    expect(job.attemptsMade).toBe(2);
    expect(job.failedReason).toContain('the server is currently unable to handle the request');
    e.kube.faults.clear();
  });

  it('fails an invalid payload or an unknown job name at once', async () => {
    const q = e.producer.queues[QUEUE_NAMES.lrp];
    await q.add('converge-lrp', { processGuid: 'x' }, { jobId: 'bad-payload' });
    await q.add('no-such-job', {}, { jobId: 'bad-name' });
    const bad = await finished('bad-payload');
    expect(bad.state).toBe('failed');
    expect(bad.job.attemptsMade).toBe(1);
    expect(bad.job.failedReason).toMatch(/^invalid payload/);
    const unknown = await finished('bad-name');
    expect(unknown.state).toBe('failed');
    expect(unknown.job.failedReason).toBe('unknown job name no-such-job');
  });

  it('runs stop-instance and sync jobs', async () => {
    const lrp = newLrp();
    await desireAndConverge(e, lrp);
    seedPod(e, pod(lrp, 'web-0', 0, 'running'));
    await e.producer.stopInstance({ processGuid: lrp.processGuid, index: 0, podName: 'web-0' });
    const stopped = await finished(`stop-${lrp.processGuid}-0-web-0`);
    expect(stopped.state).toBe('completed');
    expect(stopped.job.returnvalue).toBe('pod web-0 deleted');
    expect(names(e, 'pods')).toEqual([]);

    // The sync queue is served only by the process that watches the cluster (startSyncWorker).
    await e.producer.syncNow();
    await new Promise((r) => setTimeout(r, 300));
    const [sync] = await e.producer.queues[QUEUE_NAMES.sync].getJobs(['waiting', 'active', 'completed']);
    expect(await sync?.getState()).toBe('waiting');
  });
});

describe('workers: a report CC never takes', () => {
  let cc: FakeCc;
  let running: RunningWorkers | undefined;
  beforeAll(async () => {
    cc = await startFakeCc();
  });
  afterAll(async () => {
    await running?.close(5000);
    await cc.close();
  });

  it('is tried at capped delays until its window passes, then fails for good saying so', async () => {
    const e = await suite.newEnv();
    // Doubling from 20 ms without a cap would make 6 tries in 1.5 s; capped at 100 ms, many more.
    const window = { firstDelayMs: 20, maxDelayMs: 100, windowMs: 1500 };
    running = startWorkers(
      { ...e.deps, ccInternalUrl: cc.url },
      { connection: suite.redis, prefix: e.prefix, concurrency: 2, lockMs: 30_000, callbackRetry: window },
    );
    cc.answer(503, { body: { description: 'unavailable' } });
    const pg = '6f1c2a3b-0000-4000-8000-00000000000a-7e2d3c4b-0000-4000-8000-00000000000b';
    const crash = {
      ...ccCrashReport(pg, { crashTimestamp: 1_764_000_000 }),
      podNamespace: 'cf-workloads',
      podUid: 'uid-window',
    };
    await e.producer.reportCrash(crash);
    const id = jobId('crash', crash.podUid, crash.crashCount);
    const queue = e.producer.queues[QUEUE_NAMES.callback];
    const job = await eventually(
      async () => ((await queue.getJobState(id)) === 'failed' ? queue.getJob(id) : undefined),
      'the report to fail',
      20_000,
    );
    expect(job.failedReason).toMatch(
      /^not delivered within its retry window \(1500 ms from \d{4}-.*Z\); last error: .*503/,
    );
    expect(job.attemptsMade).toBeGreaterThan(8);
    // Each try posted once, and the last one fell on the window's end, not before it.
    expect(cc.callsTo(`/internal/v4/apps/${pg}/crashed`)).toHaveLength(job.attemptsMade);
    expect((job.finishedOn ?? 0) - job.timestamp).toBeGreaterThanOrEqual(window.windowMs);
    // Only the last few stacks are kept, however many tries there were.
    expect(job.stacktrace?.length).toBeLessThanOrEqual(3);
  });

  it("takes a task whose completion CC never took off GET /tasks, so CC's task sync fails it", async () => {
    const e = await suite.newEnv();
    await running?.close(5000);
    running = startWorkers(
      { ...e.deps, ccInternalUrl: cc.url },
      {
        connection: suite.redis,
        prefix: e.prefix,
        concurrency: 2,
        lockMs: 30_000,
        callbackRetry: { firstDelayMs: 20, maxDelayMs: 100, windowMs: 800 },
      },
    );
    cc.answer(503, { body: { description: 'unavailable' } });
    const task = sampleTask({ completionCallback: `${cc.url}/internal/v4/tasks/${TASK_GUID}/completed` });
    await e.deps.tasks.createTask(task);
    await e.deps.tasks.setTaskOutcome(TASK_GUID, {
      failed: true,
      failureReason: 'APP/TASK/migrate: Exited with status 3',
    });
    expect(await e.deps.tasks.unreportedTaskGuids()).toEqual([TASK_GUID]);
    await e.producer.reportTask(TASK_GUID);
    const id = jobId('report-task', TASK_GUID);
    const queue = e.producer.queues[QUEUE_NAMES.callback];
    await eventually(async () => (await queue.getJobState(id)) === 'failed', 'the report to fail', 20_000);
    expect(cc.callsTo(`/internal/v4/tasks/${TASK_GUID}/completed`).length).toBeGreaterThan(1);
    expect(await e.deps.tasks.unreportedTaskGuids()).toEqual([]);
  });
});
