/**
 * Tasks end to end: the API, Redis, workers and the simulated cluster, with a real HTTP server standing in
 * for CC's internal API: a task's run, failure, cancel and completion reported once (CC down for a
 * minute, CC refusing, many tasks across a worker restart, 500 at once), and bad task input refused.
 */
import { taskBody, uuid } from '@opi/contract/testing';
import { type FakeCc, startFakeCc } from '../../support/fake-cc.js';
import { type Service, call, eventually, startService } from '../../support/service.js';

interface Completed {
  task_guid: string;
  failed: boolean;
  failure_reason: string;
}

function completions(cc: FakeCc, guid: string): Completed[] {
  return cc
    .callsTo(`/internal/v4/tasks/${guid}/completed`)
    .filter((c) => c.status === 200)
    .map((c) => c.body as Completed);
}

async function completion(cc: FakeCc, guid: string, timeoutMs = 60_000): Promise<Completed> {
  return eventually(async () => completions(cc, guid)[0], `the completion of ${guid}`, timeoutMs);
}

async function taskGuids(s: Service): Promise<string[]> {
  const r = await call(s.base, 'GET', '/tasks');
  return (JSON.parse(r.text) as { guid: string }[]).map((t) => t.guid);
}

async function jobNames(s: Service): Promise<string[]> {
  const { BatchV1Api, KubeConfig } = await import('@kubernetes/client-node');
  const kc = new KubeConfig();
  kc.loadFromString(s.sim.kubeconfig());
  const jobs = await kc
    .makeApiClient(BatchV1Api)
    .listJobForAllNamespaces({ labelSelector: 'app.kubernetes.io/managed-by=opi-server' });
  return jobs.items.map((j) => j.metadata?.name ?? '');
}

describe('tasks', () => {
  let cc: FakeCc;
  let s: Service;
  beforeAll(async () => {
    cc = await startFakeCc({ rejectRepeats: true });
    s = await startService({
      workers: 2,
      env: { CC_INTERNAL_URL: cc.url, OPI_CALLBACK_BACKOFF_MS: '1000', OPI_FINISHED_JOB_TTL_SECONDS: '1' },
    });
  });
  afterAll(async () => {
    await s.close();
    await cc.close();
  });

  it('runs a task and reports success once; it then leaves GET /tasks and its Job goes', async () => {
    const g = uuid(1, 'task');
    expect((await call(s.base, 'POST', `/tasks/${g}`, taskBody(cc.url, g))).status).toBe(202);
    // Posting it again is idempotent: one Job, 202 both times.
    expect((await call(s.base, 'POST', `/tasks/${g}`, taskBody(cc.url, g))).status).toBe(202);
    expect(await taskGuids(s)).toContain(g);
    expect(JSON.parse((await call(s.base, 'GET', `/tasks/${g}`)).text)).toEqual({ guid: g });
    expect(await completion(cc, g)).toEqual({ task_guid: g, failed: false, failure_reason: '' });
    await eventually(async () => !(await taskGuids(s)).includes(g), 'the task to leave GET /tasks');
    const gone = await call(s.base, 'GET', `/tasks/${g}`);
    expect(gone.status).toBe(404);
    expect(JSON.parse(gone.text)).toHaveProperty('message');
    await eventually(
      async () => !(await jobNames(s)).some((n) => n.includes(g.slice(0, 8))),
      'the Job to be cleaned up',
    );
    expect(completions(cc, g)).toHaveLength(1);
  });

  it("reports a failing exit code, its termination message and an OOM kill in Diego's words", async () => {
    const failing = uuid(2, 'task');
    const oom = uuid(3, 'task');
    const told = uuid(8, 'task');
    await call(
      s.base,
      'POST',
      `/tasks/${failing}`,
      taskBody(cc.url, failing, { KUBESIM_BEHAVIOUR: 'fail', KUBESIM_EXIT_CODE: '3' }),
    );
    await call(s.base, 'POST', `/tasks/${oom}`, taskBody(cc.url, oom, { KUBESIM_BEHAVIOUR: 'oom' }));
    await call(
      s.base,
      'POST',
      `/tasks/${told}`,
      taskBody(cc.url, told, {
        KUBESIM_BEHAVIOUR: 'fail',
        KUBESIM_EXIT_CODE: '2',
        KUBESIM_TERMINATION_MESSAGE: `relation "users" does not exist\n${'x'.repeat(3000)}`,
      }),
    );
    // Diego's executor: "<log source>: Exited with status <n>", the source CC's APP/TASK/<task name>.
    expect(await completion(cc, failing)).toEqual({
      task_guid: failing,
      failed: true,
      failure_reason: `APP/TASK/task-${failing.slice(0, 8)}: Exited with status 3`,
    });
    expect(await completion(cc, oom)).toEqual({
      task_guid: oom,
      failed: true,
      failure_reason: `APP/TASK/task-${oom.slice(0, 8)}: Exited with status 137 (out of memory)`,
    });
    const reason = (await completion(cc, told)).failure_reason;
    expect(reason).toMatch(
      new RegExp(
        `^APP/TASK/task-${told.slice(0, 8)}: Exited with status 2: relation "users" does not exist x+…$`,
      ),
    );
    expect(reason).toHaveLength(1024);
  });

  it('cancels a task: 204, its Job goes, CC hears "task was cancelled"', async () => {
    const g = uuid(4, 'task');
    await call(s.base, 'POST', `/tasks/${g}`, taskBody(cc.url, g, { KUBESIM_RUN_MS: '600000' }));
    await eventually(
      async () =>
        (await jobNames(s)).length > 0 && (await jobNames(s)).some((n) => n.includes(g.slice(0, 8))),
      'the Job',
    );
    expect((await call(s.base, 'DELETE', `/tasks/${g}`)).status).toBe(204);
    expect(await completion(cc, g)).toEqual({
      task_guid: g,
      failed: true,
      failure_reason: 'task was cancelled',
    });
    await eventually(
      async () => !(await jobNames(s)).some((n) => n.includes(g.slice(0, 8))),
      'the Job to be deleted',
    );
    expect((await call(s.base, 'DELETE', `/tasks/${g}`)).status).toBe(404);
  });

  it('delivers a completion once after CC was down for a minute', async () => {
    const g = uuid(5, 'task');
    await cc.down();
    await call(s.base, 'POST', `/tasks/${g}`, taskBody(cc.url, g));
    await new Promise((r) => setTimeout(r, 60_000));
    expect(completions(cc, g)).toHaveLength(0);
    await cc.up();
    expect(await completion(cc, g, 120_000)).toMatchObject({ task_guid: g, failed: false });
    // Past further syncs and retries, still exactly one.
    await new Promise((r) => setTimeout(r, 3000));
    expect(completions(cc, g)).toHaveLength(1);
  }, 240_000);

  it('stops retrying when CC answers 400', async () => {
    const g = uuid(6, 'task');
    cc.answerFor(`/internal/v4/tasks/${g}`, 400, { body: { error: 'already finished' } });
    await call(s.base, 'POST', `/tasks/${g}`, taskBody(cc.url, g));
    await eventually(
      async () => cc.callsTo(`/internal/v4/tasks/${g}`).length === 1,
      'the one refused callback',
    );
    await eventually(async () => !(await taskGuids(s)).includes(g), 'the task to leave GET /tasks');
    await new Promise((r) => setTimeout(r, 3000));
    expect(cc.callsTo(`/internal/v4/tasks/${g}`)).toHaveLength(1);
    cc.answerFor(`/internal/v4/tasks/${g}`);
  });

  it('reports each of many tasks exactly once, across two workers and a worker restart', async () => {
    const guids = Array.from({ length: 40 }, (_, i) => uuid(100 + i, 'many'));
    for (const g of guids)
      await call(s.base, 'POST', `/tasks/${g}`, taskBody(cc.url, g, { KUBESIM_RUN_MS: '500' }));
    // A worker goes away mid-run and a new one comes.
    const first = s.workers[0]!;
    await first.close();
    await s.addWorker();
    await eventually(
      async () => guids.every((g) => completions(cc, g).length >= 1),
      'every completion',
      120_000,
    );
    await new Promise((r) => setTimeout(r, 3000));
    for (const g of guids) expect(completions(cc, g)).toHaveLength(1);
  }, 180_000);

  it('refuses bad task input with 4xx and creates nothing', async () => {
    const before = await jobNames(s);
    const g = uuid(7, 'bad');
    const noLifecycle = taskBody(cc.url, g);
    delete (noLifecycle as Partial<typeof noLifecycle>).lifecycle;
    const cases = [
      noLifecycle,
      { ...taskBody(cc.url, g), lifecycle: { nix_lifecycle: { image: 'x' } } },
      { ...taskBody(cc.url, g), completion_callback: 'not a url' },
      { ...taskBody(cc.url, g), completion_callback: 'ftp://cc/callback' },
    ];
    for (const body of cases) {
      const r = await call(s.base, 'POST', `/tasks/${g}`, body);
      expect(r.status).toBe(400);
      expect(JSON.parse(r.text)).toHaveProperty('message');
    }
    expect(await taskGuids(s)).not.toContain(g);
    expect(await jobNames(s)).toEqual(before);
  });
});

describe('500 tasks at once', () => {
  let cc: FakeCc;
  let s: Service;
  beforeAll(async () => {
    cc = await startFakeCc({ rejectRepeats: true });
    s = await startService({ workers: 2, env: { CC_INTERNAL_URL: cc.url, OPI_WORKER_CONCURRENCY: '32' } });
  });
  afterAll(async () => {
    await s.close();
    await cc.close();
  });

  it('reports every one exactly once', async () => {
    const guids = Array.from({ length: 500 }, (_, i) => uuid(i, 'bulk'));
    await Promise.all(
      guids.map((g) => call(s.base, 'POST', `/tasks/${g}`, taskBody(cc.url, g, { KUBESIM_RUN_MS: '100' }))),
    );
    await eventually(
      async () => guids.every((g) => completions(cc, g).length >= 1),
      'all 500 completions',
      240_000,
    );
    for (const g of guids)
      expect(completions(cc, g)).toEqual([{ task_guid: g, failed: false, failure_reason: '' }]);
    await eventually(async () => (await taskGuids(s)).length === 0, 'GET /tasks to empty');
  }, 300_000);
});
