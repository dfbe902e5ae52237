/**
 * CC away 30 minutes, scaled: CC's callback endpoint is away while tasks finish, stagings end and apps
 * crash, and when it returns every report pending arrives within a minute, each exactly once. The
 * outage and every callback delay setting (first delay, cap, window, timeout) are divided by
 * CHAOS_OUTAGE_SCALE, so the run is short and the delays stand to the outage as they would in production.
 */
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { FAST_BEHAVIOUR, type Simulator, startSimulator } from '@opi/kube-sim';
import { buildpackLifecycle, stagingBody, taskBody, uuid } from '@opi/contract/testing';
import { type FakeCc, type RecordedCall, startFakeCc } from '../support/fake-cc.js';
import { appDesireBody } from './cc-model.js';
import { NAMESPACE, OUTAGE_CRASH_APPS, OUTAGE_SCALE, OUTAGE_STAGINGS, OUTAGE_TASKS } from './config.js';
import { pool, request, sleep } from './http.js';
import { type ServiceProcess, alive, kill, logTail, spawnService } from './processes.js';
import { mulberry32 } from './prng.js';
import { type PrivateRedis, freePort, startPrivateRedis } from './redis-server.js';

const MINUTE = 60_000;
/** The production numbers, and what the run uses: each divided by the scale. */
const REAL = {
  outageMs: 30 * MINUTE,
  boundMs: MINUTE,
  firstDelayMs: 2000,
  maxDelayMs: 30_000,
  windowMs: 24 * 60 * MINUTE,
  timeoutMs: 10_000,
};
const scaled = (ms: number) => Math.round(ms / OUTAGE_SCALE);
const OUTAGE_MS = scaled(REAL.outageMs);
const BOUND_MS = scaled(REAL.boundMs);
const TIMEOUT_MS = 1000;

/** What identifies one report: a task's or staging's completion, or one crash (instance, crash count). */
function reportKey(c: RecordedCall): string | undefined {
  const task = /^\/internal\/v4\/tasks\/([^/]+)\/completed$/.exec(c.path);
  if (task?.[1]) return `task ${task[1]}`;
  const staging = /^\/internal\/v3\/staging\/([^/]+)\/build_completed$/.exec(c.path);
  if (staging?.[1]) return `staging ${staging[1]}`;
  const crash = /^\/internal\/v4\/apps\/([^/]+)\/crashed$/.exec(c.path);
  const body = c.body as { instance?: string; crash_count?: number } | undefined;
  if (crash?.[1]) return `crash ${crash[1]} ${body?.instance ?? '?'} ${String(body?.crash_count)}`;
  return undefined;
}

/** Per report: when CC took it (2xx), each time, and how often CC refused it as a repeat (400). */
function delivered(cc: FakeCc): Map<string, { took: number[]; repeats: number }> {
  const out = new Map<string, { took: number[]; repeats: number }>();
  for (const c of cc.calls) {
    const key = reportKey(c);
    if (!key || c.status === undefined) continue;
    const d = out.get(key) ?? { took: [], repeats: 0 };
    if (c.status >= 200 && c.status < 300) d.took.push(c.answeredAt ?? 0);
    else if (c.status === 400) d.repeats++;
    out.set(key, d);
  }
  return out;
}

const STAGED = JSON.stringify({
  lifecycle_type: 'buildpack',
  lifecycle_metadata: { buildpack_key: 'go-buildpack', detected_buildpack: 'go' },
  process_types: { web: './app' },
  execution_metadata: '',
});

const percentile = (sorted: number[], p: number) =>
  sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? 0;

describe('chaos: CC away 30 minutes', () => {
  let sim: Simulator | undefined;
  let redis: PrivateRedis | undefined;
  let cc: FakeCc | undefined;
  const processes: ServiceProcess[] = [];
  afterAll(async () => {
    await Promise.all(processes.map((p) => kill(p, 'SIGKILL')));
    await cc?.close();
    await redis?.close();
    await sim?.close();
  });

  it(
    `every report pending arrives within the scaled minute of CC's return, once (1/${OUTAGE_SCALE} scale)`,
    async () => {
      const started = Date.now();
      const rand = mulberry32(30);
      const logDir = await mkdtemp(join(tmpdir(), 'opi-chaos-outage-'));
      const say = (line: string) => {
        process.stdout.write(`[chaos outage +${((Date.now() - started) / 1000).toFixed(1)}s] ${line}\n`);
      };
      sim = await startSimulator({ behaviour: FAST_BEHAVIOUR, namespaces: [NAMESPACE], seed: 30 });
      const kubeconfig = join(logDir, 'kubeconfig');
      await sim.writeKubeconfig(kubeconfig);
      redis = await startPrivateRedis();
      cc = await startFakeCc({ rejectRepeats: true });
      const ccServer = cc;
      const apiPort = await freePort();
      const base = `http://127.0.0.1:${apiPort}`;
      const env: Record<string, string> = {
        REDIS_URL: redis.url,
        OPI_QUEUE_PREFIX: 'outage',
        OPI_NAMESPACE: NAMESPACE,
        OPI_METRICS_PORT: '0',
        OPI_SHUTDOWN_TIMEOUT_MS: '2000',
        CC_INTERNAL_URL: cc.url,
        OPI_CALLBACK_BACKOFF_MS: String(scaled(REAL.firstDelayMs)),
        OPI_CALLBACK_MAX_DELAY_MS: String(scaled(REAL.maxDelayMs)),
        OPI_CALLBACK_RETRY_WINDOW_MS: String(scaled(REAL.windowMs)),
        // Not scaled: a loaded machine may take longer than a scaled 10 s to answer a post after the
        // return, and a try cut short there is posted again. Hung tries end long before the return.
        OPI_CALLBACK_TIMEOUT_MS: String(TIMEOUT_MS),
        LOG_LEVEL: process.env['CHAOS_LOG_LEVEL'] ?? 'warn',
      };
      processes.push(spawnService('api', 'api', { ...env, PORT: String(apiPort) }, logDir));
      for (const n of [1, 2])
        processes.push(spawnService('worker', `worker-${n}`, { ...env, KUBECONFIG: kubeconfig }, logDir));
      for (let i = 0; i < 200 && (await request(base, 'GET', '/apps')).status === 0; i++) await sleep(100);
      say(`logs in ${logDir}; outage ${OUTAGE_MS} ms, bound ${BOUND_MS} ms`);

      // Apps that crash all along, CC up at first.
      const apps = Array.from({ length: OUTAGE_CRASH_APPS }, (_, i) => {
        const guid = uuid(i, 'outapp');
        const version = uuid(i, 'outver');
        return { guid, version, pg: `${guid}-${version}` };
      });
      for (const a of apps) {
        const body = appDesireBody(
          { ...a, instances: 2, annotation: '1.0', image: 'registry.example/app:1' },
          { environment: { KUBESIM_BEHAVIOUR: 'crash', KUBESIM_EXIT_CODE: '1', KUBESIM_RUN_MS: '1000' } },
        );
        expect((await request(base, 'PUT', `/apps/${a.pg}`, body)).status).toBe(202);
      }
      for (let i = 0; i < 300; i++) {
        if (apps.every((a) => ccServer.callsTo(`/internal/v4/apps/${a.pg}/crashed`).length > 0)) break;
        await sleep(100);
      }

      // CC goes away: refusing connections, then taking requests without answering (each try waits out
      // its timeout), then 503. Meanwhile tasks finish, stagings end and the apps keep crashing.
      const downAt = Date.now();
      const callsBefore = cc.calls.length;
      await cc.down();
      say('CC down (refusing)');
      const tasks = Array.from({ length: OUTAGE_TASKS }, (_, i) => uuid(i, 'outtask'));
      const stagings = Array.from({ length: OUTAGE_STAGINGS }, (_, i) => uuid(i, 'outstage'));
      const runMs = () => String(Math.round(1000 + rand() * (OUTAGE_MS * 0.7 - 1000)));
      await pool(tasks, 8, async (g) => {
        const fail: Record<string, string> =
          rand() < 0.2 ? { KUBESIM_BEHAVIOUR: 'fail', KUBESIM_EXIT_CODE: '3' } : {};
        const r = await request(
          base,
          'POST',
          `/tasks/${g}`,
          taskBody(ccServer.url, g, { KUBESIM_RUN_MS: runMs(), ...fail }),
        );
        expect(r.status).toBe(202);
      });
      await pool(stagings, 8, async (g) => {
        const outcome: Record<string, string> =
          rand() < 0.3
            ? {
                KUBESIM_BEHAVIOUR: 'fail',
                KUBESIM_EXIT_CODE: '2',
                KUBESIM_TERMINATION_MESSAGE: 'no buildpack detected',
              }
            : { KUBESIM_TERMINATION_MESSAGE: STAGED };
        const r = await request(
          base,
          'POST',
          `/stage/${g}`,
          stagingBody(ccServer.url, g, buildpackLifecycle(), { KUBESIM_RUN_MS: runMs(), ...outcome }),
        );
        expect(r.status).toBe(202);
      });
      // The outage's phases count from here: CC was already away while the work was handed over.
      const outageStart = Date.now();
      const at = async (fraction: number) => {
        const wait = outageStart + OUTAGE_MS * fraction - Date.now();
        if (wait > 0) await sleep(wait);
      };
      await at(0.4);
      // Held past the client's timeout; should a held request be answered at all, it is not taken.
      cc.delayMs = 3 * TIMEOUT_MS;
      cc.answer(503, { body: { description: 'unavailable' } });
      await cc.up();
      say('CC taking requests, answering none');
      await at(0.7);
      cc.delayMs = 0;
      say('CC answering 503');
      // The apps stop before CC returns, so every crash is one that happened while it was away.
      await at(0.85);
      for (const a of apps) await request(base, 'PUT', `/apps/${a.guid}/${a.version}/stop`);
      await at(1);
      const triesSeenWhileAway = cc.calls.length - callsBefore;
      cc.answer();
      const back = Date.now();
      say('CC back');

      // Every task and staging reported, and every crash the OPI tried to report while CC was away.
      const expected = () => {
        const keys = new Set<string>([
          ...tasks.map((g) => `task ${g}`),
          ...stagings.map((g) => `staging ${g}`),
        ]);
        for (const c of ccServer.calls) {
          const key = reportKey(c);
          if (key?.startsWith('crash ')) keys.add(key);
        }
        return keys;
      };
      const deadline = back + 10 * BOUND_MS + 30_000;
      const allIn = () => [...expected()].every((k) => (delivered(ccServer).get(k)?.took.length ?? 0) > 0);
      while (!allIn() && Date.now() < deadline) await sleep(50);
      // Late repeats get their chance: several capped delays.
      await sleep(3 * scaled(REAL.maxDelayMs) + 2000);

      const got = delivered(cc);
      const keys = expected();
      const late: number[] = [];
      const missing: string[] = [];
      const repeated: string[] = [];
      const overdue: string[] = [];
      for (const k of keys) {
        const d = got.get(k);
        const first = d?.took[0];
        if (first === undefined) missing.push(k);
        else if (first >= downAt) {
          late.push(first - back);
          if (first - back > BOUND_MS) overdue.push(`${k} +${first - back} ms`);
        }
        if (d && (d.took.length > 1 || d.repeats > 0)) repeated.push(k);
      }
      late.sort((a, b) => a - b);
      // An instance's crashes are reported one by one: a gap in its crash counts is a report lost.
      const counts = new Map<string, number[]>();
      for (const k of keys) {
        const m = /^crash (\S+) (\S+) (\d+)$/.exec(k);
        if (m) counts.set(`${m[1]} ${m[2]}`, [...(counts.get(`${m[1]} ${m[2]}`) ?? []), Number(m[3])]);
      }
      const gaps = [...counts].filter(([, c]) => {
        const sorted = [...c].sort((a, b) => a - b);
        return sorted.some((n, i) => i > 0 && n !== (sorted[i - 1] ?? 0) + 1);
      });
      say(
        `${keys.size} reports (${tasks.length} tasks, ${stagings.length} stagings, ` +
          `${keys.size - tasks.length - stagings.length} crashes); ${late.length} pending at CC's return ` +
          `arrived after it in p50 ${percentile(late, 50)} ms, p99 ${percentile(late, 99)} ms, ` +
          `max ${late.at(-1) ?? 0} ms (bound ${BOUND_MS} ms); CC saw ${triesSeenWhileAway} tries while away`,
      );
      if (overdue.length) say(`past the bound: ${overdue.length}, e.g. ${overdue.slice(0, 3).join('; ')}`);
      for (const k of repeated.slice(0, 5)) {
        const calls = cc.calls.filter((c) => reportKey(c) === k);
        say(
          `repeated ${k}: ${calls.map((c) => (c.answeredAt ? `${String(c.status)}@${c.answeredAt - back}` : 'held')).join(' ')}`,
        );
      }
      for (const p of processes)
        if (!alive(p)) throw new Error(`${p.name} died: ${p.unexpectedExit ?? ''}\n${logTail(p)}`);
      expect({ missing, repeated, gaps }).toEqual({ missing: [], repeated: [], gaps: [] });
      expect(counts.size).toBe(2 * apps.length);
      // Pending at the return: every task and staging, and crashes whose report CC did not take before.
      expect(late.length).toBeGreaterThanOrEqual(tasks.length + stagings.length);
      expect(late.at(-1)).toBeLessThanOrEqual(BOUND_MS);
      expect(late[0]).toBeGreaterThanOrEqual(0);
    },
    OUTAGE_MS + 180_000,
  );
});
