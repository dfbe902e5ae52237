/**
 * The bench's command line: `--quick` (smaller sizes, shorter runs), `--only=<scenario>` and the watch
 * scenario's flags, read once and checked before anything runs; the sizes and durations they choose.
 */

export const quick = process.argv.includes('--quick');
/** `--only=convergence` (or reads, ingest, queue, watch, drift, routing): one scenario, for profiling. */
const only = process.argv.find((a) => a.startsWith('--only='))?.slice('--only='.length);
export type Scenario = 'reads' | 'ingest' | 'queue' | 'convergence' | 'watch' | 'drift' | 'routing';
export const runs = (scenario: Scenario): boolean => only === undefined || only === scenario;

/** The scenarios' sizes, durations and counts; smaller with --quick. */
export const plan = quick
  ? {
      appsSizes: [1000],
      instancesSize: 1000,
      listRuns: 2,
      readSeconds: 2,
      ingestSeconds: 4,
      podRuns: 30,
      jobs: 2000,
      convergeCount: 300,
      convergeRounds: 3,
      clusterLatencyMs: 50,
      scalingCount: 150,
    }
  : {
      appsSizes: [1000, 10_000, 100_000],
      instancesSize: 10_000,
      listRuns: 3,
      readSeconds: 8,
      ingestSeconds: 10,
      podRuns: 100,
      jobs: 10_000,
      convergeCount: 1000,
      convergeRounds: 3,
      clusterLatencyMs: 50,
      scalingCount: 1000,
    };

/** The watch scenario's flags. */
export interface WatchCacheOptions {
  /** `--apps 2000` or `--apps 2000,10000`: apps per run, one run per size. */
  sizes: number[];
  /** `--kubeconfig <file>`: a real API server instead of the simulated cluster. */
  kubeconfig: string | undefined;
  /** `--with-sim`: with --kubeconfig, the simulated cluster too, in the same run. */
  withSim: boolean;
  /** `--window-s`: the idle window over which requests (and a real server's CPU) are counted. */
  windowSeconds: number;
  /** `--repeat`: samples of each freshness figure. */
  repeat: number;
  /** `--workers`: worker processes (one holds the Lease). */
  workers: number;
  /** `--resync-s`: OPI_RESYNC_INTERVAL_MS during the run, so that resyncs fall inside the window. */
  resyncSeconds: number;
}

/** A flag's value, given as `--name value` or `--name=value`. */
function flagValue(argv: readonly string[], name: string): string | undefined {
  const i = argv.indexOf(`--${name}`);
  if (i >= 0) return argv[i + 1];
  return argv.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3);
}

function watchCacheOptions(argv: readonly string[], quick: boolean): WatchCacheOptions {
  const num = (name: string, fallback: number): number => {
    const v = flagValue(argv, name);
    if (v === undefined) return fallback;
    const n = Number(v);
    if (!Number.isInteger(n) || n <= 0) throw new Error(`--${name} wants a positive whole number, not ${v}`);
    return n;
  };
  const apps = flagValue(argv, 'apps');
  const sizes = apps ? apps.split(',').map(Number) : [quick ? 1000 : 10_000];
  if (sizes.some((n) => !Number.isInteger(n) || n < 100))
    throw new Error(`--apps wants sizes ≥ 100, not ${apps}`);
  return {
    sizes,
    kubeconfig: flagValue(argv, 'kubeconfig'),
    withSim: argv.includes('--with-sim'),
    windowSeconds: num('window-s', quick ? 30 : 180),
    repeat: num('repeat', quick ? 15 : 50),
    workers: num('workers', 2),
    resyncSeconds: num('resync-s', 60),
  };
}

/** The watch scenario's flags, as above. */
export const watchOptions = watchCacheOptions(process.argv, quick);
