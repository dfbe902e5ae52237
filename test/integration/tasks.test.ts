/**
 * Tasks, staging and every report to CC, end to end: the API, Redis, workers and the simulated cluster,
 * with a real HTTP server standing in for CC's internal API and a real registry on loopback.
 */
import { buildpackLifecycle, desireBody, stagingBody, taskBody, uuid } from '@opi/contract/testing';
import { type FakeCc, type RecordedCall, startFakeCc } from '../support/fake-cc.js';
import { type TestRegistry, pushImage, startRegistry } from '../support/registry.js';
import { type Service, call, eventually, startService } from '../support/service.js';

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

describe('staging', () => {
  let cc: FakeCc;
  let s: Service;
  let registry: TestRegistry;
  let privateRegistry: TestRegistry;
  beforeAll(async () => {
    cc = await startFakeCc();
    registry = await startRegistry();
    privateRegistry = await startRegistry({ htpasswd: { username: 'robot', password: 'pa55:word' } });
    await pushImage(registry, 'team/app', '1', {
      Entrypoint: ['/app'],
      Cmd: ['serve'],
      ExposedPorts: { '8080/tcp': {} },
      User: 'vcap',
    });
    await pushImage(privateRegistry, 'team/secret', '2', { Cmd: ['run'], ExposedPorts: { '9090/tcp': {} } });
    s = await startService({ workers: 1, env: { CC_INTERNAL_URL: cc.url } });
  });
  afterAll(async () => {
    await s.close();
    await cc.close();
    await registry.stop();
    await privateRegistry.stop();
  });

  async function built(g: string): Promise<RecordedCall> {
    return eventually(
      async () => cc.callsTo(`/internal/v3/staging/${g}/build_completed`)[0],
      `the staging result of ${g}`,
      60_000,
    );
  }

  it('stages a docker image by reading its config from the registry', async () => {
    const g = uuid(1, 'stage');
    const image = `${registry.host}/team/app:1`;
    expect(
      (await call(s.base, 'POST', `/stage/${g}`, stagingBody(cc.url, g, { docker_lifecycle: { image } })))
        .status,
    ).toBe(202);
    const c = await built(g);
    expect(c.query).toEqual({ start: 'false' });
    const body = c.body as {
      result: {
        lifecycle_type: string;
        lifecycle_metadata: unknown;
        process_types: unknown;
        execution_metadata: string;
      };
    };
    expect(body.result).toMatchObject({
      lifecycle_type: 'docker',
      lifecycle_metadata: { docker_image: image },
      process_types: { web: '' },
    });
    expect(JSON.parse(body.result.execution_metadata)).toEqual({
      cmd: ['/app', 'serve'],
      ports: [{ Port: 8080, Protocol: 'tcp' }],
      user: 'vcap',
    });
  });

  it('uses the given registry credentials, and reports wrong ones as a StagingError without the password', async () => {
    const ok = uuid(2, 'stage');
    const bad = uuid(3, 'stage');
    const image = `${privateRegistry.host}/team/secret:2`;
    await call(
      s.base,
      'POST',
      `/stage/${ok}`,
      stagingBody(cc.url, ok, {
        docker_lifecycle: { image, registry_username: 'robot', registry_password: 'pa55:word' },
      }),
    );
    await call(
      s.base,
      'POST',
      `/stage/${bad}`,
      stagingBody(cc.url, bad, {
        docker_lifecycle: { image, registry_username: 'robot', registry_password: 'wrong-secret' },
      }),
    );
    const good = (await built(ok)).body as { result: { execution_metadata: string } };
    expect(JSON.parse(good.result.execution_metadata)).toMatchObject({
      ports: [{ Port: 9090, Protocol: 'tcp' }],
    });
    const refused = await built(bad);
    expect(refused.body).toMatchObject({ error: { id: 'StagingError' } });
    expect(refused.rawBody).not.toContain('wrong-secret');
  });

  it('reports an unknown image and an unreachable registry as StagingErrors with clear messages', async () => {
    const unknown = uuid(4, 'stage');
    const unreachable = uuid(5, 'stage');
    await call(
      s.base,
      'POST',
      `/stage/${unknown}`,
      stagingBody(cc.url, unknown, { docker_lifecycle: { image: `${registry.host}/team/nothing:9` } }),
    );
    await call(
      s.base,
      'POST',
      `/stage/${unreachable}`,
      stagingBody(cc.url, unreachable, { docker_lifecycle: { image: '127.0.0.1:1/team/app:1' } }),
    );
    expect((await built(unknown)).body).toMatchObject({
      error: { id: 'StagingError', message: expect.stringContaining('not found') },
    });
    expect((await built(unreachable)).body).toMatchObject({
      error: { id: 'StagingError', message: expect.stringContaining('unreachable') },
    });
  });

  const buildpack = buildpackLifecycle({ skip_detect: false });

  it('stages with the buildpack recipe and reports its termination message', async () => {
    const g = uuid(6, 'stage');
    const result = {
      lifecycle_type: 'buildpack',
      lifecycle_metadata: { buildpack_key: 'go-buildpack', detected_buildpack: 'go' },
      process_types: { web: './app' },
      execution_metadata: '',
    };
    await call(
      s.base,
      'POST',
      `/stage/${g}`,
      stagingBody(cc.url, g, buildpack, {
        KUBESIM_RUN_MS: '200',
        KUBESIM_TERMINATION_MESSAGE: JSON.stringify(result),
      }),
    );
    expect((await built(g)).body).toEqual({ result });
  });

  it('reports a failed buildpack staging as a StagingError', async () => {
    const g = uuid(7, 'stage');
    await call(
      s.base,
      'POST',
      `/stage/${g}`,
      stagingBody(cc.url, g, buildpack, {
        KUBESIM_RUN_MS: '200',
        KUBESIM_BEHAVIOUR: 'fail',
        KUBESIM_EXIT_CODE: '2',
        KUBESIM_TERMINATION_MESSAGE: 'no buildpack detected',
      }),
    );
    const body = (await built(g)).body as { error: { id: string; message: string } };
    expect(body.error.id).toBe('StagingError');
    expect(body.error.message).toContain('no buildpack detected');
  });

  /** A buildpack's 2,000-line log that ends in a failed compile, the error a few lines from the end. */
  const compileLog = [
    '-----> Ruby Buildpack version 1.8.58',
    ...Array.from({ length: 1990 }, (_, i) => `       Installing gem-${i} 1.0.${i}`),
    '       Gem::Ext::BuildError: ERROR: Failed to build gem native extension.',
    '       An error occurred while installing nokogiri (1.10.9), and Bundler cannot continue.',
    "       Make sure that `gem install nokogiri -v '1.10.9'` succeeds before bundling.",
    ' !     Failed to install gems via Bundler.',
    ' !',
    'Failed to compile droplet: Failed to run all supply scripts: exit status 14',
  ].join('\n');

  it.each<[string, string, string]>([
    ['223, a compile failure', '223', 'BuildpackCompileFailed'],
    ['1, any other failure', '1', 'StagingError'],
  ])(
    'reports a recipe exiting %s with a 2,000-line log: its id, and the error line CC can store',
    async (_what, code, id) => {
      const g = uuid(code === '223' ? 9 : 10, 'stage');
      await call(
        s.base,
        'POST',
        `/stage/${g}`,
        stagingBody(cc.url, g, buildpack, {
          KUBESIM_RUN_MS: '200',
          KUBESIM_BEHAVIOUR: 'fail',
          KUBESIM_EXIT_CODE: code,
          KUBESIM_LOG: compileLog,
        }),
      );
      const call_ = await built(g);
      // The stand-in CC checked it against CC's rules (builds.error_description varchar(255) after
      // "Staging error: "); this is what the user sees.
      expect(call_.cc?.problems).toEqual([]);
      expect(call_.body).toEqual({
        error: {
          id,
          message: `Exited with status ${code}: An error occurred while installing nokogiri (1.10.9), and Bundler cannot continue.`,
        },
      });
    },
  );
});

describe('crash reports', () => {
  let cc: FakeCc;
  let s: Service;
  beforeAll(async () => {
    cc = await startFakeCc();
    s = await startService({ workers: 1, env: { CC_INTERNAL_URL: cc.url } });
  });
  afterAll(async () => {
    await s.close();
    await cc.close();
  });

  it('sends one report per crash of a crash-looping app, with a rising crash_count', async () => {
    const g = uuid(1, 'crash');
    const v = uuid(1, 'v1');
    const pg = `${g}-${v}`;
    await call(
      s.base,
      'PUT',
      `/apps/${pg}`,
      desireBody(g, v, {
        environment: { KUBESIM_BEHAVIOUR: 'crash', KUBESIM_EXIT_CODE: '7', KUBESIM_RUN_MS: '100' },
      }),
    );
    const reports = await eventually(
      async () => {
        const r = cc.callsTo(`/internal/v4/apps/${pg}/crashed`).map(
          (c) =>
            c.body as {
              crash_count: number;
              exit_status: number;
              exit_description: string;
              reason: string;
              index: number;
              instance: string;
              crash_timestamp: number;
            },
        );
        return r.length >= 3 ? r : undefined;
      },
      'three crash reports',
      90_000,
    );
    const counts = reports.map((r) => r.crash_count);
    expect(new Set(counts).size).toBe(counts.length);
    expect([...counts].sort((a, b) => a - b)).toEqual(counts.slice().sort((a, b) => a - b));
    // As Diego's tps-watcher says it: the state, the executor's words, nanoseconds.
    expect(reports[0]).toMatchObject({
      exit_status: 7,
      reason: 'CRASHED',
      exit_description: 'APP/PROC/WEB: Exited with status 7',
      index: 0,
    });
    expect(reports[0]?.instance).toMatch(/^app-/);
    const ns = reports[0]?.crash_timestamp ?? 0;
    expect(Math.abs(ns / 1e6 - Date.now())).toBeLessThan(5 * 60_000);
  }, 120_000);

  it.each<[string, number, Record<string, unknown>, RegExp]>([
    [
      'an OOM kill',
      1,
      { environment: { KUBESIM_BEHAVIOUR: 'oom', KUBESIM_RUN_MS: '100' } },
      /^APP\/PROC\/WEB: Exited with status 137 \(out of memory\)$/,
    ],
    [
      'an image that cannot be pulled',
      2,
      { lifecycle: { docker_lifecycle: { image: 'registry.example/kubesim-pull-error:1', command: [] } } },
      /^APP\/PROC\/WEB: ErrImagePull: \S/,
    ],
  ])(
    'says what happened: %s',
    async (what, n, extra, description) => {
      const g = uuid(n, 'said');
      const v = uuid(1, 'v1');
      const pg = `${g}-${v}`;
      await call(s.base, 'PUT', `/apps/${pg}`, desireBody(g, v, extra));
      const report = await eventually(
        async () => cc.callsTo(`/internal/v4/apps/${pg}/crashed`)[0],
        `a crash report (${what})`,
        60_000,
      );
      expect(report.body).toMatchObject({
        reason: 'CRASHED',
        exit_description: expect.stringMatching(description),
      });
      expect(report.cc?.problems).toEqual([]);
    },
    90_000,
  );
});
