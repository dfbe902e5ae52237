/**
 * Metrics and health end to end: real traffic through the API, a worker and the simulated cluster
 * (desires, reads, tasks reported to a stand-in CC, a report CC refuses and one it never takes), then
 * /metrics of the API and of the worker scraped, parsed and checked: every named series there, counts
 * at least the traffic sent, histograms observed, no guid in any label. /healthz and /readyz too,
 * including a second API whose Redis port is closed.
 */
import { randomUUID } from 'node:crypto';
import { createServer } from 'node:net';
import { Writable } from 'node:stream';
import { pino } from 'pino';
import { parseSettings } from '@opi/config';
import { desireBody, taskBody } from '@opi/contract/testing';
import { type RunningApi, startApi } from '../../../apps/api/src/index.js';
import { type FakeCc, startFakeCc } from '../../support/fake-cc.js';
import { type Service, call, deployedGuids, eventually, startService } from '../../support/service.js';

// ---------------------------------------------------------------------------------------------------
// A small reader of Prometheus' text format (what prom-client writes): samples with their labels.

interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

interface Scrape {
  samples: Sample[];
  types: Map<string, string>;
}

const SAMPLE = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)(?:\s+-?\d+)?$/;
const LABEL = /([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g;

function parseValue(v: string): number {
  if (v === '+Inf') return Infinity;
  if (v === '-Inf') return -Infinity;
  return Number(v);
}

function parsePrometheusText(text: string): Scrape {
  const samples: Sample[] = [];
  const types = new Map<string, string>();
  for (const line of text.split('\n')) {
    if (line.trim() === '') continue;
    if (line.startsWith('#')) {
      const t = /^# TYPE (\S+) (\S+)$/.exec(line);
      if (t) types.set(t[1]!, t[2]!);
      continue;
    }
    const m = SAMPLE.exec(line);
    if (!m) throw new Error(`not a sample line: ${line}`);
    const labels: Record<string, string> = {};
    for (const l of (m[2] ?? '').matchAll(LABEL)) {
      labels[l[1]!] = l[2]!.replace(/\\n/g, '\n').replace(/\\(["\\])/g, '$1');
    }
    samples.push({ name: m[1]!, labels, value: parseValue(m[3]!) });
  }
  return { samples, types };
}

function find(s: Scrape, name: string, match: Record<string, string> = {}): Sample[] {
  return s.samples.filter(
    (x) => x.name === name && Object.entries(match).every(([k, v]) => x.labels[k] === v),
  );
}

/** The sum over every series of `name` whose labels include `match`; 0 when there is none. */
function total(s: Scrape, name: string, match: Record<string, string> = {}): number {
  return find(s, name, match).reduce((a, x) => a + x.value, 0);
}

async function scrape(base: string): Promise<Scrape> {
  const res = await fetch(`${base}/metrics`);
  expect(res.status).toBe(200);
  expect(res.headers.get('content-type')).toMatch(/^text\/plain; version=0\.0\.4/);
  return parsePrometheusText(await res.text());
}

// ---------------------------------------------------------------------------------------------------

const UUID = /[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/i;
const QUEUES = ['lrp', 'sync', 'task', 'callback'];
const STATES = ['waiting', 'active', 'delayed', 'failed', 'completed'];

/** A port nothing listens on: taken from the OS, then let go. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : 0;
  await new Promise<void>((resolve) => {
    server.close(() => {
      resolve();
    });
  });
  return port;
}

describe('metrics and health', () => {
  let cc: FakeCc;
  let s: Service;
  let worker: string;
  /** An API whose Redis does not answer; its log lines are kept. */
  let down: RunningApi | undefined;
  const downLog: string[] = [];
  const sent: string[] = [];
  const lrps = [0, 1, 2].map(() => ({ guid: randomUUID(), version: randomUUID() }));
  const tasks = { ok: randomUUID(), refused: randomUUID(), failing: randomUUID() };

  beforeAll(async () => {
    cc = await startFakeCc();
    const port = await closedPort();
    const logger = pino(
      { level: 'info' },
      new Writable({
        write(chunk: Buffer, _enc, done) {
          downLog.push(...chunk.toString().split('\n').filter(Boolean));
          done();
        },
      }),
    );
    // The dead API waits up to 10 s for Redis before it listens: started alongside the service, and
    // whichever starts is closed again by afterAll even if the other does not.
    const [service, dead] = await Promise.allSettled([
      startService({
        workers: 1,
        workerMetrics: true,
        // Tries 50 ms apart within a 300 ms window, so a report CC never takes fails within the test.
        env: { OPI_CALLBACK_RETRY_WINDOW_MS: '300', OPI_CALLBACK_BACKOFF_MS: '50' },
      }),
      startApi(
        parseSettings({
          PORT: '0',
          REDIS_URL: `redis://127.0.0.1:${port}`,
          OPI_QUEUE_PREFIX: 'it-metrics-down',
          OPI_METRICS_PORT: '0',
        }),
        logger,
      ),
    ]);
    if (dead.status === 'fulfilled') down = dead.value;
    if (service.status === 'rejected') throw service.reason;
    s = service.value;
    if (dead.status === 'rejected') throw dead.reason;
    worker = `http://127.0.0.1:${s.workers[0]!.metricsPort!}`;
  }, 60_000);

  afterAll(async () => {
    await down?.close();
    await s?.close();
    await cc?.close();
  });

  it('counts real traffic, by route pattern, job, queue and Kubernetes call, with no guid in a label', async () => {
    // --- traffic -------------------------------------------------------------------------------------
    for (const { guid, version } of lrps) {
      const pg = `${guid}-${version}`;
      sent.push(guid, version, pg);
      expect((await call(s.base, 'PUT', `/apps/${pg}`, desireBody(guid, version))).status).toBe(202);
    }
    expect((await call(s.base, 'GET', '/apps')).status).toBe(200);
    expect((await call(s.base, 'GET', '/apps')).status).toBe(200);
    const first = lrps[0]!;
    expect((await call(s.base, 'GET', `/apps/${first.guid}/${first.version}`)).status).toBe(200);
    expect((await call(s.base, 'GET', `/apps/${first.guid}/${first.version}/instances`)).status).toBe(200);
    // No route, and a body refused before routing: both with guids in the URL.
    const stray = randomUUID();
    sent.push(stray);
    expect((await call(s.base, 'GET', `/nowhere/${stray}`)).status).toBe(404);
    const bad = await fetch(`${s.base}/apps/${stray}-${stray}`, { method: 'PUT', body: '{not json' });
    expect(bad.status).toBe(400);

    cc.answerFor(`/internal/v4/tasks/${tasks.refused}/`, 404);
    cc.answerFor(`/internal/v4/tasks/${tasks.failing}/`, 503);
    for (const g of Object.values(tasks)) {
      sent.push(g);
      expect((await call(s.base, 'POST', `/tasks/${g}`, taskBody(cc.url, g))).status).toBe(202);
    }

    await eventually(async () => {
      const deployed = await deployedGuids(s);
      return lrps.every(({ guid, version }) => deployed.has(`${guid}-${version}`));
    }, 'the three LRPs to be deployed');
    await eventually(
      async () => cc.callsTo(`/internal/v4/tasks/${tasks.ok}/`).some((c) => c.status === 200),
      'the completed task to be reported',
    );
    await eventually(
      async () => cc.callsTo(`/internal/v4/tasks/${tasks.refused}/`).some((c) => c.status === 404),
      'the refused report',
    );
    // The cache's counts are stamped by its writer once a second, after the watch brought the objects.
    for (const base of [s.base, worker]) {
      await eventually(
        async () => total(await scrape(base), 'opi_cache_objects', { kind: 'deployments' }) >= 3,
        'the cache to count the three Deployments',
      );
    }
    // Failed for good when its window ended: the worker counts it then.
    const w = await eventually(async () => {
      const m = await scrape(worker);
      return total(m, 'opi_callbacks_failed_total', { kind: 'task', reason: 'window_passed' }) >= 1 && m;
    }, 'the failing report to fail when its window ends');
    const api = await scrape(s.base);

    // --- the API ---------------------------------------------------------------------------------------
    const http = (method: string, route: string, status: string) =>
      total(api, 'opi_http_requests_total', { method, route, status });
    expect(http('PUT', '/apps/:process_guid', '202')).toBeGreaterThanOrEqual(3);
    expect(http('GET', '/apps', '200')).toBeGreaterThanOrEqual(2);
    expect(http('GET', '/apps/:guid/:version', '200')).toBeGreaterThanOrEqual(1);
    expect(http('GET', '/apps/:guid/:version/instances', '200')).toBeGreaterThanOrEqual(1);
    expect(http('POST', '/tasks/:task_guid', '202')).toBeGreaterThanOrEqual(3);
    expect(http('GET', 'unmatched', '404')).toBeGreaterThanOrEqual(1);
    expect(http('PUT', 'unmatched', '400')).toBeGreaterThanOrEqual(1);
    expect(api.types.get('opi_http_request_duration_seconds')).toBe('histogram');
    const putCount = total(api, 'opi_http_request_duration_seconds_count', {
      method: 'PUT',
      route: '/apps/:process_guid',
    });
    expect(putCount).toBeGreaterThanOrEqual(3);
    expect(
      total(api, 'opi_http_request_duration_seconds_bucket', {
        method: 'PUT',
        route: '/apps/:process_guid',
        le: '+Inf',
      }),
    ).toBe(putCount);
    expect(
      total(api, 'opi_http_request_duration_seconds_sum', { method: 'PUT', route: '/apps/:process_guid' }),
    ).toBeGreaterThan(0);

    for (const m of [api, w]) {
      for (const queue of QUEUES) {
        for (const state of STATES) {
          const [depth] = find(m, 'opi_queue_depth', { queue, state });
          expect(depth).toBeDefined();
          expect(Number.isInteger(depth!.value) && depth!.value >= 0).toBe(true);
        }
      }
      expect(find(m, 'opi_callbacks_pending')).toHaveLength(1);
      expect(total(m, 'opi_callbacks_pending')).toBeGreaterThanOrEqual(0);
      const [age] = find(m, 'opi_cache_age_seconds');
      expect(age!.value).toBeGreaterThanOrEqual(0);
      expect(age!.value).toBeLessThan(30);
      const [last] = find(m, 'opi_sync_last_success_timestamp_seconds');
      expect(Math.abs(Date.now() / 1000 - last!.value)).toBeLessThan(30);
      expect(total(m, 'opi_cache_objects', { kind: 'deployments' })).toBeGreaterThanOrEqual(3);
      expect(total(m, 'opi_metrics_collect_errors_total')).toBe(0);
      // Node's own, with the prefix.
      expect(find(m, 'opi_process_cpu_seconds_total')).toHaveLength(1);
      expect(find(m, 'opi_nodejs_eventloop_lag_seconds')).toHaveLength(1);
    }

    // --- the worker ------------------------------------------------------------------------------------
    const jobs = (queue: string, name: string, outcome: string) =>
      total(w, 'opi_jobs_total', { queue, name, outcome });
    expect(jobs('lrp', 'converge-lrp', 'completed')).toBeGreaterThanOrEqual(3);
    expect(jobs('task', 'run-task', 'completed')).toBeGreaterThanOrEqual(3);
    expect(jobs('sync', 'sync-cluster', 'completed')).toBeGreaterThanOrEqual(1);
    expect(jobs('callback', 'report-task', 'completed')).toBeGreaterThanOrEqual(2);
    expect(jobs('callback', 'report-task', 'retried')).toBeGreaterThanOrEqual(1);
    expect(jobs('callback', 'report-task', 'failed')).toBeGreaterThanOrEqual(1);
    expect(
      total(w, 'opi_job_duration_seconds_count', {
        queue: 'lrp',
        name: 'converge-lrp',
        outcome: 'completed',
      }),
    ).toBe(jobs('lrp', 'converge-lrp', 'completed'));
    // The report that failed for good took every try its window allowed (several); the others took one each.
    const gaveUp = { queue: 'callback', name: 'report-task', outcome: 'failed' };
    expect(total(w, 'opi_job_attempts_count', gaveUp)).toBe(1);
    expect(total(w, 'opi_job_attempts_sum', gaveUp)).toBeGreaterThanOrEqual(2);
    expect(total(w, 'opi_job_attempts_count', { queue: 'lrp', outcome: 'completed' })).toBeGreaterThanOrEqual(
      3,
    );

    expect(
      total(w, 'opi_callbacks_failed_total', { kind: 'task', reason: 'refused' }),
    ).toBeGreaterThanOrEqual(1);
    for (const kind of ['staging', 'crash']) {
      for (const reason of ['refused', 'window_passed', 'gave_up']) {
        expect(find(w, 'opi_callbacks_failed_total', { kind, reason })).toHaveLength(1);
      }
    }

    const kube = find(w, 'opi_kube_requests_total');
    for (const k of kube) {
      expect(['get', 'list', 'create', 'update', 'patch', 'delete']).toContain(k.labels['verb']);
      expect(k.labels['resource']).toMatch(/^[a-z]+$/);
      expect(k.labels['status']).toMatch(/^(\d{3}|error)$/);
    }
    const kubeCalls = (verb: string, resource: string, status: string) =>
      total(w, 'opi_kube_requests_total', { verb, resource, status });
    expect(kubeCalls('list', 'deployments', '200')).toBeGreaterThanOrEqual(1);
    expect(kubeCalls('list', 'pods', '200')).toBeGreaterThanOrEqual(1);
    expect(kubeCalls('create', 'deployments', '201')).toBeGreaterThanOrEqual(3);
    expect(kubeCalls('create', 'jobs', '201')).toBeGreaterThanOrEqual(3);
    expect(total(w, 'opi_kube_request_duration_seconds_count', { verb: 'list', resource: 'pods' })).toBe(
      total(w, 'opi_kube_requests_total', { verb: 'list', resource: 'pods' }),
    );
    expect(total(w, 'opi_sync_duration_seconds_count')).toBeGreaterThanOrEqual(1);
    expect(total(w, 'opi_sync_duration_seconds_sum')).toBeGreaterThan(0);

    // --- no guid anywhere in a label ----------------------------------------------------------------------
    for (const m of [api, w]) {
      for (const x of m.samples) {
        for (const v of Object.values(x.labels)) {
          expect(v).not.toMatch(UUID);
          for (const g of sent) expect(v).not.toContain(g);
        }
      }
    }
  });

  it('answers /healthz and /readyz on the API and the worker', async () => {
    const health = await call(s.base, 'GET', '/healthz');
    expect(health).toEqual({ status: 200, text: 'ok' });
    const ready = await eventually(async () => {
      const r = await call(s.base, 'GET', '/readyz');
      return r.status === 200 && r.text;
    }, 'the API to be ready');
    expect(JSON.parse(ready)).toMatchObject({
      status: 'ok',
      checks: { redis: { ok: true }, cache: { ok: true } },
    });

    expect(await call(worker, 'GET', '/healthz')).toEqual({ status: 200, text: 'ok' });
    const wready = await call(worker, 'GET', '/readyz');
    expect(wready.status).toBe(200);
    expect(JSON.parse(wready.text)).toMatchObject({
      status: 'ok',
      checks: { redis: { ok: true }, kubernetes: { ok: true } },
    });
    expect((await call(worker, 'GET', '/elsewhere')).status).toBe(404);
    expect((await call(worker, 'POST', '/metrics')).status).toBe(405);
  });

  it('makes the worker unready while Kubernetes fails, and ready again after', async () => {
    s.sim.faults.set({ errorRate: 1, errorCodes: [503], resources: ['namespaces'] });
    try {
      const r = await call(worker, 'GET', '/readyz');
      expect(r.status).toBe(503);
      const body = JSON.parse(r.text) as { checks: Record<string, { ok: boolean; message: string }> };
      expect(body.checks['kubernetes']?.ok).toBe(false);
      expect(body.checks['redis']?.ok).toBe(true);
      // Liveness is about the workers, not their dependencies.
      expect((await call(worker, 'GET', '/healthz')).status).toBe(200);
    } finally {
      s.sim.faults.reset();
    }
    expect((await call(worker, 'GET', '/readyz')).status).toBe(200);
  });

  it('with Redis unreachable: alive, not ready (naming Redis), and /metrics still answers at once', async () => {
    const base = `http://127.0.0.1:${down!.port}`;
    expect(await call(base, 'GET', '/healthz')).toEqual({ status: 200, text: 'ok' });
    const r = await call(base, 'GET', '/readyz');
    expect(r.status).toBe(503);
    const body = JSON.parse(r.text) as {
      status: string;
      checks: Record<string, { ok: boolean; message: string }>;
    };
    expect(body.status).toBe('unavailable');
    expect(body.checks['redis']).toEqual({ ok: false, message: expect.stringMatching(/not connected/) });
    expect(body.checks['cache']?.ok).toBe(false);

    const started = Date.now();
    const m = await scrape(base);
    expect(Date.now() - started).toBeLessThan(3000);
    // Labelled series are left out; the others say "unknown".
    expect(find(m, 'opi_queue_depth')).toHaveLength(0);
    expect(find(m, 'opi_cache_objects')).toHaveLength(0);
    for (const name of [
      'opi_cache_age_seconds',
      'opi_sync_last_success_timestamp_seconds',
      'opi_callbacks_pending',
    ]) {
      expect(find(m, name).map((x) => x.value)).toEqual([NaN]);
    }
    expect(total(m, 'opi_metrics_collect_errors_total', { source: 'queues' })).toBeGreaterThanOrEqual(1);
    expect(total(m, 'opi_http_requests_total', { route: '/readyz', status: '503' })).toBe(1);

    // CC's requests are logged; probes and scrapes are not.
    expect((await call(base, 'GET', '/apps')).status).toBe(503);
    await eventually(async () => downLog.some((l) => l.includes('"url":"/apps"')), 'the request log line');
    const logged = downLog.filter((l) => l.includes('request completed'));
    expect(logged.some((l) => /"url":"\/(healthz|readyz|metrics)"/.test(l))).toBe(false);
  });
});
