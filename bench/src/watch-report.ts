/**
 * The watch scenario's results per cluster and size, and the rows they make: LIST requests while idle,
 * the API server's CPU, the first list, the leader's memory and the freshness figures.
 */
import { percentile } from './common.js';
import { requestsOf } from './kube-proxy.js';
import type { WatchCacheOptions } from './options.js';
import type { Row } from './report.js';
import { WORKER_NODE_ARGS } from './service.js';
import { TIMEOUT_MS } from './watch-freshness.js';

/** The kinds the cache writer watches (StatefulSets in either mode: an LRP keeps its kind). */
export const KINDS = ['deployments', 'statefulsets', 'pods', 'jobs'] as const;

/** One freshness figure's samples (ms; NaN when not seen in time), ours and the bare watch's. */
export interface Samples {
  ours: number[];
  bare: number[];
}

/** What one run (a cluster, a size) measured; latest.json keeps it whole. */
export interface SizeResult {
  cluster: string;
  apps: number;
  pods: number;
  firstListMs: number;
  bareListMs: number[];
  leaderPeakRssBytes: number;
  leaderFirstListRssBytes: number;
  /** The leader's peak RSS in each phase after the first list. */
  leaderRssByPhase: Record<string, number>;
  otherWorkerRssBytes: number;
  windowSeconds: number;
  /** Requests in the idle window; undefined when it was not reached (a worker died). */
  windowCounts: Record<string, number> | undefined;
  totalCounts: Record<string, number>;
  perWorkerWindow: Record<string, number>[];
  cpu?: { alonePercent: number[]; idlePercent: number };
  replaced: Samples;
  crashed: Samples;
  task: Samples;
  /** Why the run ended early, when a worker died. */
  failure?: string;
}

function appsLabel(n: number): string {
  return n >= 1000 ? `${n / 1000}k apps` : `${n} apps`;
}

/** The rows of one run. */
export function rowsOf(r: SizeResult, o: WatchCacheOptions): Row[] {
  const size = `${r.cluster}, ${appsLabel(r.apps)}`;
  const rows: Row[] = [];
  const w = r.windowSeconds;
  const window = new Map(
    Object.entries(r.windowCounts ?? {}).map(([k, v]) => [k, { requests: v, bytes: 0 }]),
  );
  const total = new Map(Object.entries(r.totalCounts).map(([k, v]) => [k, { requests: v, bytes: 0 }]));
  const others = Object.entries(r.windowCounts ?? {})
    .filter(([k]) => !k.startsWith('LIST'))
    .map(([k, v]) => `${k} ${v}`)
    .join(', ');
  for (const kind of KINDS) {
    const lists = requestsOf(window, 'LIST', kind);
    // Not counted when a worker died before the window.
    const perHour = r.windowCounts ? (lists * 3600) / w : NaN;
    rows.push({
      scenario: 'watch: LIST requests while idle',
      size,
      metric: `${kind}, per hour`,
      ours: perHour,
      baseline: NaN,
      unit: '/h',
      ratio: NaN,
      ratioMeaning: '',
      target: '≤ 1/h',
      met: perHour <= 1,
      note:
        (r.windowCounts ? '' : 'not measured: a worker died before the idle window; ') +
        `${lists} in a ${w} s window × ${3600 / w}, ${o.workers} workers, resync every ${o.resyncSeconds} s; ` +
        `since the start ${requestsOf(total, 'LIST', kind)} lists + ${requestsOf(total, 'LIST_PAGE', kind)} further pages, ` +
        `${requestsOf(total, 'WATCH', kind)} watches; the 5 s sync listed each kind 720 times an hour` +
        (kind === 'jobs' ? `; the window's other requests: ${others || 'none'}` : ''),
    });
  }
  if (r.cpu) {
    const alone = r.cpu.alonePercent.reduce((a, b) => a + b, 0) / r.cpu.alonePercent.length;
    const ratio = r.cpu.idlePercent / alone;
    rows.push({
      scenario: 'watch: kube-apiserver + etcd CPU, service idle',
      size,
      metric: '% of a core',
      ours: r.cpu.idlePercent,
      baseline: alone,
      unit: '%',
      ratio,
      ratioMeaning: '× the cluster alone',
      target: '≤ 1.10× alone',
      met: ratio <= 1.1,
      note: `${w} s windows; alone before and after: ${r.cpu.alonePercent.map((x) => x.toFixed(2)).join(' %, ')} %`,
    });
  }
  // The mean of the runs before and after: with two, a median would be the faster one.
  const bare = r.bareListMs.reduce((a, b) => a + b, 0) / r.bareListMs.length;
  rows.push({
    scenario: 'watch: first list applied',
    size,
    metric: 'ms, list → cache written',
    ours: r.firstListMs,
    baseline: bare,
    unit: 'ms',
    ratio: r.firstListMs / bare,
    ratioMeaning: '× the bare paged list',
    target: '≤ 2× bare',
    met: r.firstListMs / bare <= 2,
    note: `bare list (3 collections at once, pages of 500, nothing kept) before and after: ${r.bareListMs.map((x) => Math.round(x)).join(', ')} ms`,
  });
  rows.push({
    scenario: 'watch: worker RSS (Lease holder)',
    size,
    metric: 'peak RSS',
    ours: r.leaderPeakRssBytes,
    baseline: r.otherWorkerRssBytes,
    unit: 'B',
    ratio: r.leaderPeakRssBytes / r.otherWorkerRssBytes,
    ratioMeaning: '× a worker without the Lease',
    target: '≤ 250 MB',
    // A worker that died (out of heap, at the shipped flags) did not stay within its memory either.
    met: r.leaderPeakRssBytes <= 250e6 && r.failure === undefined,
    note:
      `${r.pods} pods; peak ${(r.leaderFirstListRssBytes / 1e6).toFixed(0)} MB to the end of the first list, then ` +
      Object.entries(r.leaderRssByPhase)
        .map(([k, v]) => `${(v / 1e6).toFixed(0)} MB in the ${k}`)
        .join(', ') +
      `; node ${WORKER_NODE_ARGS.join(' ') || '(V8 defaults)'}` +
      (r.failure ? `; ${r.failure}` : ''),
  });
  const fresh = (scenario: string, s: Samples, p: number, maxMs: number | undefined, what: string): Row => {
    const failed = s.ours.filter((x) => !Number.isFinite(x)).length;
    // A sample that never came counts as never: it lands at the top of the distribution.
    const ours = percentile(
      s.ours.map((x) => (Number.isFinite(x) ? x : Infinity)),
      p,
    );
    const base = percentile(
      s.bare.filter((x) => Number.isFinite(x)),
      p,
    );
    return {
      scenario,
      size,
      metric: `p${p}`,
      ours,
      baseline: base,
      unit: 'ms',
      ratio: ours / base,
      ratioMeaning: '× a bare watch',
      target: maxMs === undefined ? '—' : `≤ ${maxMs} ms`,
      met: maxMs === undefined ? (failed ? false : undefined) : ours <= maxMs && failed === 0,
      note: s.ours.length
        ? `${s.ours.length} ${what}${failed ? `, ${failed} not seen within ${TIMEOUT_MS / 1000} s` : ''}`
        : 'not measured: a worker died before',
    };
  };
  const pod = 'watch: pod deleted → replacement in /instances';
  const crash = 'watch: crash → report at CC';
  const job = "watch: task's Job finished → callback";
  rows.push(fresh(pod, r.replaced, 50, 1000, 'replacements (delete, create, status: Running)'));
  rows.push(fresh(pod, r.replaced, 99, 3000, 'replacements'));
  rows.push(fresh(crash, r.crashed, 50, 2000, 'crashes (restartCount 0 → 1)'));
  rows.push(fresh(crash, r.crashed, 99, undefined, 'crashes'));
  rows.push(fresh(job, r.task, 50, 2000, 'tasks (Job status: Complete)'));
  rows.push(fresh(job, r.task, 99, undefined, 'tasks'));
  return rows;
}
