/**
 * Real Redis topologies on loopback from the machine's `redis-server` (Debian's package): a Cluster of
 * three masters (slots split by `redis-cli --cluster create`), and a master watched by one Sentinel. Each
 * node runs in a temporary directory with persistence off, and is killed by close().
 */
import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { Redis } from 'ioredis';
import { eventually } from './eventually.js';

const run = promisify(execFile);
const HOST = '127.0.0.1';

export interface HostPort {
  host: string;
  port: number;
}

export interface RedisTopology {
  nodes: HostPort[];
  close(): Promise<void>;
}

/** Whether this machine can run these tests (redis-server and redis-cli on PATH). */
export async function redisToolsInstalled(): Promise<boolean> {
  try {
    await run('redis-server', ['--version']);
    await run('redis-cli', ['--version']);
    return true;
  } catch {
    return false;
  }
}

function portFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = createServer();
    s.once('error', () => {
      resolve(false);
    });
    s.listen(port, HOST, () => {
      s.close(() => {
        resolve(true);
      });
    });
  });
}

/** A free port whose cluster bus port (port + 10000) is free too. */
async function freePort(taken: Set<number>): Promise<number> {
  for (let i = 0; i < 200; i++) {
    const port = 20000 + Math.floor(Math.random() * 30000);
    if (taken.has(port) || taken.has(port + 10000)) continue;
    if ((await portFree(port)) && (await portFree(port + 10000))) {
      taken.add(port);
      taken.add(port + 10000);
      return port;
    }
  }
  throw new Error('no free port pair for a Redis Cluster node');
}

async function ping(port: number): Promise<boolean> {
  const r = new Redis({
    host: HOST,
    port,
    lazyConnect: true,
    maxRetriesPerRequest: 0,
    retryStrategy: () => null,
  });
  r.on('error', () => undefined);
  try {
    await r.connect();
    return (await r.ping()) === 'PONG';
  } catch {
    return false;
  } finally {
    r.disconnect();
  }
}

class Processes {
  readonly children: ChildProcess[] = [];
  private readonly exitHook = (): void => {
    this.killAll();
  };

  constructor() {
    // A test run that dies must not leave servers behind on the machine.
    process.once('exit', this.exitHook);
  }

  start(args: string[], dir: string): ChildProcess {
    const child = spawn('redis-server', args, { cwd: dir, stdio: 'ignore' });
    this.children.push(child);
    return child;
  }

  killAll(): void {
    for (const c of this.children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
  }

  async close(dir: string): Promise<void> {
    process.off('exit', this.exitHook);
    await Promise.all(
      this.children.map(
        (c) =>
          new Promise<void>((resolve) => {
            if (c.exitCode !== null || c.signalCode !== null) {
              resolve();
              return;
            }
            c.once('exit', () => {
              resolve();
            });
            c.kill('SIGKILL');
          }),
      ),
    );
    await rm(dir, { recursive: true, force: true });
  }
}

const EPHEMERAL = ['--bind', HOST, '--save', '', '--appendonly', 'no', '--maxmemory-policy', 'noeviction'];

/** A Redis Cluster of `masters` masters and no replicas, every slot assigned, state ok on every node. */
export async function startRedisCluster(masters = 3): Promise<RedisTopology> {
  const dir = await mkdtemp(join(tmpdir(), 'redis-cluster-'));
  const procs = new Processes();
  try {
    const taken = new Set<number>();
    const ports: number[] = [];
    for (let i = 0; i < masters; i++) ports.push(await freePort(taken));
    for (const port of ports) {
      procs.start(
        [
          '--port',
          String(port),
          ...EPHEMERAL,
          '--cluster-enabled',
          'yes',
          '--cluster-config-file',
          `nodes-${port}.conf`,
          '--cluster-node-timeout',
          '5000',
        ],
        dir,
      );
    }
    for (const port of ports) await eventually(() => ping(port), `redis-server on port ${port}`, 10_000);
    await run('redis-cli', [
      '--cluster',
      'create',
      ...ports.map((p) => `${HOST}:${p}`),
      '--cluster-replicas',
      '0',
      '--cluster-yes',
    ]);
    // `create` returns once the slots are assigned; each node says ok only once gossip has settled.
    for (const port of ports) {
      await eventually(
        async () => {
          const { stdout } = await run('redis-cli', ['-h', HOST, '-p', String(port), 'cluster', 'info']);
          return stdout.includes('cluster_state:ok');
        },
        `cluster_state:ok on port ${port}`,
        20_000,
      );
    }
    return { nodes: ports.map((port) => ({ host: HOST, port })), close: () => procs.close(dir) };
  } catch (e) {
    await procs.close(dir);
    throw e;
  }
}

/** A master and one Sentinel watching it as `name`; `nodes` holds the Sentinel. */
export async function startRedisSentinel(name = 'opi'): Promise<RedisTopology & { master: HostPort }> {
  const dir = await mkdtemp(join(tmpdir(), 'redis-sentinel-'));
  const procs = new Processes();
  try {
    const taken = new Set<number>();
    const masterPort = await freePort(taken);
    const sentinelPort = await freePort(taken);
    procs.start(['--port', String(masterPort), ...EPHEMERAL], dir);
    await eventually(() => ping(masterPort), 'the master', 10_000);
    // A Sentinel rewrites its configuration file, so it needs one of its own.
    const conf = join(dir, 'sentinel.conf');
    await writeFile(
      conf,
      [
        `port ${sentinelPort}`,
        `bind ${HOST}`,
        `sentinel monitor ${name} ${HOST} ${masterPort} 1`,
        `sentinel down-after-milliseconds ${name} 5000`,
        '',
      ].join('\n'),
    );
    procs.start([conf, '--sentinel'], dir);
    await eventually(
      async () => {
        const { stdout } = await run('redis-cli', [
          '-h',
          HOST,
          '-p',
          String(sentinelPort),
          'sentinel',
          'get-master-addr-by-name',
          name,
        ]);
        return stdout.includes(String(masterPort));
      },
      'the sentinel to know the master',
      10_000,
    );
    return {
      master: { host: HOST, port: masterPort },
      nodes: [{ host: HOST, port: sentinelPort }],
      close: () => procs.close(dir),
    };
  } catch (e) {
    await procs.close(dir);
    throw e;
  }
}
