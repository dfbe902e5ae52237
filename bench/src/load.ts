/**
 * Load from autocannon: in the bench's own process (`load`, for requests built by a function), or from a
 * process of its own (`loadInChild`) where the bench's process would distort the figures: at 100k apps it
 * also holds the simulated cluster, whose garbage collection paused the client, not the server measured.
 * Also the requests that desire new LRPs, which the ingest and the convergence send.
 */
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import autocannon from 'autocannon';
import { VERSION, desireBody } from './bodies.js';
import { percentile, repo } from './common.js';

export interface Load {
  p50: number;
  p99: number;
  rps: number;
  total: number;
  bad: number;
}

/** What a load run in a child process may be given: plain data only. */
export type PlainLoadOptions = Pick<
  autocannon.Options,
  'url' | 'connections' | 'duration' | 'method' | 'headers'
>;

/**
 * One autocannon run. Latencies are taken from each response's own time (a float in ms) rather than
 * autocannon's histogram, which keeps whole milliseconds: sub-millisecond answers would all read 0 or 1.
 */
export async function load(opts: autocannon.Options): Promise<Load> {
  const times: number[] = [];
  // Without a callback autocannon answers its tracker, an EventEmitter that is also a promise of the result.
  const instance = autocannon({ ...opts }) as unknown as autocannon.Instance & PromiseLike<autocannon.Result>;
  instance.on('response', (_client: unknown, statusCode: number, _bytes: number, ms: number) => {
    if (statusCode < 300) times.push(ms);
  });
  const r = await instance;
  return {
    p50: percentile(times, 50),
    p99: percentile(times, 99),
    rps: r.requests.average,
    total: r.requests.total,
    bad: r.non2xx + r.errors,
  };
}

/** `load` in a Node process of its own (bench/dist/load-child.js), answered as JSON on its stdout. */
export function loadInChild(opts: PlainLoadOptions): Promise<Load> {
  return new Promise((resolve, reject) => {
    const proc = spawn(process.execPath, [join(repo, 'bench/dist/load-child.js'), JSON.stringify(opts)], {
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    let out = '';
    proc.stdout.on('data', (c: Buffer) => (out += c.toString('utf8')));
    proc.on('error', reject);
    proc.on('exit', (code) => {
      if (code !== 0) reject(new Error(`load child exited with ${String(code)}`));
      else resolve(JSON.parse(out) as Load);
    });
  });
}

/** autocannon requests that each desire a new LRP, its app guid from `nextGuid`. */
export function newDesires(nextGuid: () => string): autocannon.Request[] {
  return [
    {
      method: 'PUT',
      setupRequest: (req) => {
        const guid = nextGuid();
        return { ...req, path: `/apps/${guid}-${VERSION}`, body: JSON.stringify(desireBody(guid, VERSION)) };
      },
    },
  ];
}
