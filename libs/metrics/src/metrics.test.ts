import { describe, expect, it, jest } from '@jest/globals';
import {
  checkCacheFresh,
  createMetrics,
  httpObserver,
  MAX_CACHE_AGE_MS,
  pingRedis,
  routeOf,
  runChecks,
  type MetricSources,
  type OpiMetrics,
  type QueueCountsSource,
} from './index.js';

interface Value {
  value: number;
  labels: Record<string, string | number>;
  metricName?: string;
}

async function values(m: OpiMetrics, name: string): Promise<Value[]> {
  const all = await m.registry.getMetricsAsJSON();
  return (all.find((x) => x.name === name)?.values ?? []) as Value[];
}

function queue(counts: Record<string, number>): QueueCountsSource & { calls: number } {
  const q = {
    calls: 0,
    getJobCounts: () => {
      q.calls++;
      return Promise.resolve(counts);
    },
  };
  return q;
}

function sources(over: Partial<MetricSources> = {}): MetricSources {
  return {
    queues: { lrp: queue({ waiting: 2, active: 1 }), callback: queue({ waiting: 3, delayed: 4, failed: 1 }) },
    callbackQueue: 'callback',
    store: {
      cacheMeta: () =>
        Promise.resolve({ syncedAt: Date.now() - 1500, deployments: 7, statefulsets: 2, pods: 9 }),
    },
    ...over,
  };
}

describe('createMetrics', () => {
  it('has Node process metrics with the opi_ prefix, and its own registry each time', async () => {
    const a = createMetrics();
    const b = createMetrics();
    expect(a.registry).not.toBe(b.registry);
    expect(await a.registry.metrics()).toContain('opi_process_cpu_seconds_total');
    expect(await createMetrics({ defaultMetrics: false }).registry.metrics()).not.toContain('opi_process_');
  });

  it('reads queue depth per queue and state, and the pending callbacks, in one read per scrape', async () => {
    const m = createMetrics({ defaultMetrics: false });
    const src = sources();
    m.watch(src);
    await m.registry.metrics();
    const depth = await values(m, 'opi_queue_depth');
    expect(depth).toHaveLength(10);
    expect(depth).toContainEqual({ value: 2, labels: { queue: 'lrp', state: 'waiting' } });
    expect(depth).toContainEqual({ value: 0, labels: { queue: 'lrp', state: 'completed' } });
    expect(depth).toContainEqual({ value: 1, labels: { queue: 'callback', state: 'failed' } });
    expect((await values(m, 'opi_callbacks_pending'))[0]?.value).toBe(7);
    // One scrape above, then two JSON reads: each collector round reads the queue once.
    expect((src.queues['lrp'] as ReturnType<typeof queue>).calls).toBe(3);
  });

  it('reports the cache: age, last sync, objects; +Inf and 0 before the first sync', async () => {
    const m = createMetrics({ defaultMetrics: false });
    const unwatch = m.watch(sources());
    const age = (await values(m, 'opi_cache_age_seconds'))[0]!.value;
    expect(age).toBeGreaterThanOrEqual(1.4);
    expect(age).toBeLessThan(10);
    expect((await values(m, 'opi_sync_last_success_timestamp_seconds'))[0]!.value).toBeCloseTo(
      Date.now() / 1000,
      -1,
    );
    expect(await values(m, 'opi_cache_objects')).toContainEqual({ value: 9, labels: { kind: 'pods' } });
    expect(await values(m, 'opi_cache_objects')).toContainEqual({
      value: 2,
      labels: { kind: 'statefulsets' },
    });
    unwatch();
    m.watch(sources({ store: { cacheMeta: () => Promise.resolve(undefined) } }));
    expect((await values(m, 'opi_cache_age_seconds'))[0]!.value).toBe(Infinity);
    expect((await values(m, 'opi_sync_last_success_timestamp_seconds'))[0]!.value).toBe(0);
    expect(await values(m, 'opi_cache_objects')).toEqual([]);
  });

  it('does not hang on a Redis that does not answer, and does not pile up reads', async () => {
    const m = createMetrics({ defaultMetrics: false, collectTimeoutMs: 50 });
    const hung = {
      calls: 0,
      getJobCounts: () => (hung.calls++, new Promise<Record<string, number>>(() => {})),
    };
    m.watch(sources({ queues: { lrp: hung }, store: { cacheMeta: () => new Promise(() => {}) } }));
    const started = Date.now();
    const text = await m.registry.metrics();
    await m.registry.metrics();
    expect(Date.now() - started).toBeLessThan(1000);
    expect(text).not.toContain('opi_queue_depth{');
    // prom-client writes NaN as "Nan"; Prometheus reads it either way.
    expect(text).toMatch(/^opi_cache_age_seconds nan$/im);
    expect(text).toMatch(/^opi_callbacks_pending nan$/im);
    expect(text).toContain('opi_metrics_collect_errors_total{source="queues"} 1');
    expect(hung.calls).toBe(1);
  });

  it('does not wait at all when Redis is known to be away', async () => {
    const m = createMetrics({ defaultMetrics: false, collectTimeoutMs: 60_000 });
    const q = queue({});
    m.watch(sources({ queues: { lrp: q }, connected: () => false }));
    const text = await m.registry.metrics();
    expect(q.calls).toBe(0);
    expect(text).toContain('opi_metrics_collect_errors_total{source="sync"} 1');
  });

  it('counts jobs, attempts only when a job is done, Kubernetes calls and callback failures', async () => {
    const m = createMetrics({ defaultMetrics: false });
    m.observeJob('lrp', 'converge-lrp', 'retried', 20, 1);
    m.observeJob('lrp', 'converge-lrp', 'completed', 30, 2);
    m.observeKubeCall({ verb: 'list', resource: 'pods', status: 200, durationMs: 12 });
    m.observeKubeCall({ verb: 'get', resource: 'namespaces', status: 'error', durationMs: 30_000 });
    m.observeCallbackFailure('crash', 'refused');
    m.observeDesireRefused('quota', 0);
    m.observeDesireRefused('invalid');
    const text = await m.registry.metrics();
    expect(text).toContain('opi_desire_refused_total{reason="invalid"} 1');
    expect(text).toContain('opi_desire_refused_total{reason="quota"} 0');
    expect(text).toContain('opi_jobs_total{queue="lrp",name="converge-lrp",outcome="retried"} 1');
    expect(text).toContain('opi_job_attempts_sum{queue="lrp",name="converge-lrp",outcome="completed"} 2');
    expect(text).not.toContain('opi_job_attempts_count{queue="lrp",name="converge-lrp",outcome="retried"}');
    expect(text).toContain('opi_kube_requests_total{verb="get",resource="namespaces",status="error"} 1');
    expect(text).toContain('opi_kube_request_duration_seconds_sum{verb="list",resource="pods"} 0.012');
    expect(text).toContain('opi_callbacks_failed_total{kind="crash",reason="refused"} 1');
    // Every kind and reason exists from the start.
    expect(text).toContain('opi_callbacks_failed_total{kind="staging",reason="gave_up"} 0');
  });
});

describe('httpObserver', () => {
  it('labels a request by its route pattern, or as unmatched', () => {
    expect(routeOf({ method: 'GET', baseUrl: '', route: { path: '/apps/:guid' } })).toBe('/apps/:guid');
    expect(routeOf({ method: 'GET', baseUrl: '/v1', route: { path: '/x/:id' } })).toBe('/v1/x/:id');
    expect(routeOf({ method: 'GET' })).toBe('unmatched');
  });

  it('counts an answered request by its status, and an aborted one as aborted', async () => {
    const m = createMetrics({ defaultMetrics: false });
    const observe = httpObserver(m);
    const req = { method: 'PUT', baseUrl: '', route: { path: '/apps/:process_guid' } };
    observe(req, { statusCode: 202, writableFinished: true }, 3);
    observe(req, { statusCode: 202, writableFinished: false }, 3);
    const text = await m.registry.metrics();
    expect(text).toContain(
      'opi_http_requests_total{method="PUT",route="/apps/:process_guid",status="202"} 1',
    );
    expect(text).toContain(
      'opi_http_requests_total{method="PUT",route="/apps/:process_guid",status="aborted"} 1',
    );
  });
});

describe('health checks', () => {
  it('runs checks side by side, each within its own time, naming what failed', async () => {
    const report = await runChecks({
      fine: { run: () => Promise.resolve('ok'), timeoutMs: 100 },
      slow: { run: () => new Promise<string>(() => {}), timeoutMs: 20 },
      broken: { run: () => Promise.reject(new Error('boom')), timeoutMs: 100 },
    });
    expect(report).toEqual({
      status: 'unavailable',
      checks: {
        fine: { ok: true, message: 'ok' },
        slow: { ok: false, message: 'the check took longer than 20 ms' },
        broken: { ok: false, message: 'boom' },
      },
    });
  });

  it('pings only a connected Redis', async () => {
    const ping = jest.fn(() => Promise.resolve('PONG'));
    await expect(pingRedis({ status: 'reconnecting', ping })).rejects.toThrow('not connected (reconnecting)');
    expect(ping).not.toHaveBeenCalled();
    await expect(pingRedis({ status: 'ready', ping })).resolves.toBe('ok');
  });

  it('calls the cache fresh while its writer stamped it within 60 s', async () => {
    expect(MAX_CACHE_AGE_MS).toBe(60_000);
    const at = (syncedAt: number) => ({
      cacheMeta: () => Promise.resolve({ syncedAt, deployments: 0, pods: 0 }),
    });
    const now = () => 1_000_000;
    await expect(checkCacheFresh(at(1_000_000 - 59_000), 60_000, now)).resolves.toBe(
      'cache confirmed fresh 59 s ago',
    );
    // A clock a little ahead in the syncing worker is not a negative age.
    await expect(checkCacheFresh(at(1_000_500), 60_000, now)).resolves.toBe('cache confirmed fresh 0 s ago');
    await expect(checkCacheFresh(at(1_000_000 - 61_000), 60_000, now)).rejects.toThrow(
      'cache last confirmed fresh 61 s ago, longer than 60 s',
    );
    await expect(checkCacheFresh({ cacheMeta: () => Promise.resolve(undefined) }, 60_000)).rejects.toThrow(
      'the cache has not been written yet',
    );
  });
});
