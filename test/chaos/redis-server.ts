/**
 * A private redis-server for the chaos suite: its own port and temporary directory, append-only file on,
 * so it can be SIGKILLed, restarted from its AOF and flushed without touching the machine's shared Redis.
 *
 * `appendfsync always`: the suite checks that a SIGKILLed Redis keeps every write it acknowledged. With
 * `everysec` it need not: while an fsync is slow (a busy disk), Redis holds the AOF buffer back for up to
 * two seconds and answers meanwhile, and a seed once lost its canary that way.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { freePort } from '@opi/router-rig';

/** One free-port finder for every rig: the router rig's. */
export { freePort };

export interface PrivateRedis {
  readonly port: number;
  readonly url: string;
  readonly dir: string;
  /** SIGKILL: no shutdown save, only what the AOF holds survives. */
  kill(): Promise<void>;
  /** Starts again on the same port and directory (reloading the AOF); resolves once it answers PING. */
  start(): Promise<void>;
  flushAll(): Promise<void>;
  /** Runs `fn` on a fresh connection, closed afterwards. */
  withClient<T>(fn: (c: Redis) => Promise<T>): Promise<T>;
  running(): boolean;
  close(): Promise<void>;
}

function exited(p: ChildProcess): Promise<void> {
  return new Promise((resolve) => {
    if (p.exitCode !== null || p.signalCode !== null) resolve();
    else
      p.once('exit', () => {
        resolve();
      });
  });
}

export async function startPrivateRedis(): Promise<PrivateRedis> {
  const dir = await mkdtemp(join(tmpdir(), 'opi-chaos-redis-'));
  const port = await freePort();
  let proc: ChildProcess | undefined;

  const ping = async (): Promise<boolean> => {
    const c = new Redis({ port, host: '127.0.0.1', lazyConnect: true, maxRetriesPerRequest: 0 });
    c.on('error', () => undefined);
    try {
      await c.connect();
      return (await c.ping()) === 'PONG';
    } catch {
      return false;
    } finally {
      c.disconnect();
    }
  };

  const start = async (): Promise<void> => {
    proc = spawn(
      'redis-server',
      [
        '--port',
        String(port),
        '--bind',
        '127.0.0.1',
        '--dir',
        dir,
        '--save',
        '',
        '--appendonly',
        'yes',
        '--appendfsync',
        'always',
        '--maxmemory-policy',
        'noeviction',
        '--daemonize',
        'no',
      ],
      { stdio: 'ignore' },
    );
    for (let i = 0; i < 200; i++) {
      if (await ping()) return;
      await new Promise((r) => setTimeout(r, 50));
    }
    throw new Error(`private redis-server on ${port} did not start`);
  };

  const kill = async (): Promise<void> => {
    const p = proc;
    if (!p) return;
    proc = undefined;
    p.kill('SIGKILL');
    await exited(p);
  };

  const withClient = async <T>(fn: (c: Redis) => Promise<T>): Promise<T> => {
    const c = new Redis({ port, host: '127.0.0.1' });
    try {
      return await fn(c);
    } finally {
      c.disconnect();
    }
  };

  await start();
  return {
    port,
    url: `redis://127.0.0.1:${port}`,
    dir,
    kill,
    start,
    running: () => proc !== undefined,
    flushAll: async () => {
      await withClient((c) => c.flushall());
    },
    withClient,
    close: async () => {
      await kill();
      await rm(dir, { recursive: true, force: true });
    },
  };
}
