/**
 * The watch scenario's freshness figures: how soon a change the bench makes in the cluster (a pod
 * replaced, a crash, a task's Job finished) reaches the API's answers or CC, against a bare watch.
 */
import { randomBytes } from 'node:crypto';
import { taskJobName } from '@opi/translation';
import { taskBody, uuid } from '@opi/contract/testing';
import { podBody, runningStatus, seconds } from './app-objects.js';
import type { CcSink } from './cc-sink.js';
import { log, pollUntil, sleep } from './common.js';
import type { WatchCacheOptions } from './options.js';
import { type Seeded, instancesOf } from './seeding.js';
import type { BareWatch } from './watch-baselines.js';
import type { Target } from './watch-clusters.js';
import type { SizeResult } from './watch-report.js';

/** How long a change may take to be seen before its sample counts as never. */
export const TIMEOUT_MS = 20_000;

/** The task CC sends (docs/api.md) for `guid`, calling back to the bench's sink, with nothing to run. */
function benchTaskBody(sinkUrl: string, guid: string): Record<string, unknown> {
  return {
    ...taskBody(sinkUrl, guid),
    name: 'bench-task',
    environment: [],
    lifecycle: { docker_lifecycle: { image: 'registry.example/task:1', command: ['/bin/true'] } },
  };
}

/**
 * The three freshness figures, `o.repeat` samples each, into `r`: a pod deleted and replaced until
 * /instances shows the replacement running; a crash (restartCount raised on the pod's status) until CC
 * gets its report; a task's Job finished (its status) until its completion callback arrives. Each
 * against the bare watch opened through the same kind of proxy: the floor any watcher has.
 */
export async function freshness(c: {
  o: WatchCacheOptions;
  tag: string;
  target: Target;
  seeded: Seeded[];
  api: string;
  sink: CcSink;
  watch: BareWatch;
  alive: () => void;
  r: Pick<SizeResult, 'replaced' | 'crashed' | 'task'>;
}): Promise<void> {
  const { o, tag, target, seeded, api, sink, watch, alive, r } = c;
  const size = seeded.length;
  const namespace = target.namespace;
  const ns = `/namespaces/${namespace}`;
  const pick = (i: number, shift: number): Seeded => {
    const at = (Math.floor(((i + 0.5) * size) / o.repeat) + shift) % size;
    const s = seeded[instancesOf(at) === 1 ? at : (at + 1) % size];
    if (!s || s.others.length > 0) throw new Error('no such single-instance app');
    return s;
  };

  log(`[${tag}] pod deleted → replacement in /instances, ${o.repeat} times`);
  for (let i = 0; i < o.repeat; i++) {
    alive();
    const s = pick(i, 0);
    const name = `${s.pod.replace(/-r\d+$/, '')}-r${i}`;
    // A start time of its own, so the replacement's `since` tells it from the pod it replaced.
    const startedAt = seconds(new Date(Date.UTC(2001, 0, 1) + i * 1000));
    const sinceMs = Date.parse(startedAt);
    const bare = watch.expect(
      (p, type) =>
        type !== 'DELETED' &&
        p.metadata.name === name &&
        (p.status?.['phase'] as string | undefined) === 'Running',
      TIMEOUT_MS,
    );
    const t0 = performance.now();
    await target.rest.send('DELETE', `/api/v1${ns}/pods/${s.pod}?gracePeriodSeconds=0`);
    await target.rest.send('POST', `/api/v1${ns}/pods`, podBody(s.lrp, name, namespace));
    await target.rest.status(`/api/v1${ns}/pods/${name}`, runningStatus(s.lrp, startedAt));
    s.pod = name;
    const seen = await pollUntil(async () => {
      const res = await fetch(`${api}/apps/${s.lrp.guid}/${s.lrp.version}/instances`);
      const body = (await res.json()) as { instances?: { since?: number; state?: string }[] };
      const inst = body.instances ?? [];
      return (
        inst.length === 1 &&
        inst[0]?.state === 'RUNNING' &&
        Math.round((inst[0].since ?? 0) / 1e6) === sinceMs
      );
    }, TIMEOUT_MS);
    r.replaced.ours.push(seen - t0);
    r.replaced.bare.push((await bare) - t0);
    await sleep(100);
  }

  log(`[${tag}] crash → report at CC, ${o.repeat} times`);
  const shift = Math.max(1, Math.floor(size / (2 * o.repeat)));
  for (let i = 0; i < o.repeat; i++) {
    alive();
    const s = pick(i, shift);
    const pg = s.lrp.processGuid;
    const now = new Date();
    const finishedAt = seconds(now);
    const startedAt = seconds(new Date(now.getTime() - 60_000));
    const bare = watch.expect((p) => {
      const cs = p.status?.['containerStatuses'] as { restartCount?: number }[] | undefined;
      return p.metadata.name === s.pod && cs?.[0]?.restartCount === 1;
    }, TIMEOUT_MS);
    const report = sink.next(
      (a) =>
        a.path === `/internal/v4/apps/${pg}/crashed` &&
        (a.body as { crash_count?: number } | undefined)?.crash_count === 1,
      TIMEOUT_MS,
    );
    const t0 = performance.now();
    await target.rest.status(
      `/api/v1${ns}/pods/${s.pod}`,
      runningStatus(s.lrp, startedAt, { restarts: 1, finishedAt }),
    );
    r.crashed.ours.push(await report.then((a) => a.at - t0).catch(() => NaN));
    r.crashed.bare.push((await bare) - t0);
    await sleep(100);
  }

  log(`[${tag}] task's Job finished → callback, ${o.repeat} times`);
  for (let i = 0; i < o.repeat; i++) {
    alive();
    const guid = uuid(i, `t${randomBytes(3).toString('hex')}`);
    const job = taskJobName(guid);
    const created = watch.expect((j, type) => type === 'ADDED' && j.metadata.name === job, TIMEOUT_MS);
    const res = await fetch(`${api}/tasks/${guid}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(benchTaskBody(sink.url, guid)),
    });
    if (res.status !== 202) throw new Error(`POST /tasks answered ${res.status}: ${await res.text()}`);
    if (Number.isNaN(await created)) {
      r.task.ours.push(NaN);
      r.task.bare.push(NaN);
      continue;
    }
    const bare = watch.expect((j) => {
      const conds = j.status?.['conditions'] as { type?: string; status?: string }[] | undefined;
      return (
        j.metadata.name === job && (conds ?? []).some((x) => x.type === 'Complete' && x.status === 'True')
      );
    }, TIMEOUT_MS);
    const callback = sink.next((a) => a.path === `/internal/v4/tasks/${guid}/completed`, TIMEOUT_MS);
    const at = seconds(new Date());
    const t0 = performance.now();
    await target.rest.status(`/apis/batch/v1${ns}/jobs/${job}`, {
      startTime: at,
      completionTime: at,
      succeeded: 1,
      conditions: [{ type: 'Complete', status: 'True', lastProbeTime: at, lastTransitionTime: at }],
    });
    r.task.ours.push(await callback.then((a) => a.at - t0).catch(() => NaN));
    r.task.bare.push((await bare) - t0);
    await sleep(100);
  }
}
