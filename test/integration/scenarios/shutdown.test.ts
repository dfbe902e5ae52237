/**
 * The all-in-one process (`npm start`) as a user runs it: it starts on the built-in simulated cluster,
 * serves a desire, and on SIGTERM stops accepting, finishes, and exits 0.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Redis } from 'ioredis';
import { desireBody, uuid } from '@opi/contract/testing';
import { call, eventually } from '../../support/service.js';
import { deletePrefix } from '../../support/redis-keys.js';

const repo = resolve(dirname(fileURLToPath(import.meta.url)), '../../..');
const prefix = `it-shutdown-${randomBytes(3).toString('hex')}`;

let child: ChildProcess | undefined;
let output = '';

afterAll(async () => {
  child?.kill('SIGKILL');
  const redis = new Redis('redis://127.0.0.1:6379');
  await deletePrefix(redis, prefix);
  redis.disconnect();
});

it('serves on the simulated cluster, then exits 0 on SIGTERM', async () => {
  child = spawn(process.execPath, [join(repo, 'apps/server/dist/main.js')], {
    env: {
      PATH: process.env['PATH'] ?? '',
      PORT: '0',
      OPI_QUEUE_PREFIX: prefix,
      LOG_LEVEL: 'info',
      OPI_RESYNC_INTERVAL_MS: '500',
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const exited = new Promise<number | null>((r) =>
    child?.once('exit', (code) => {
      r(code);
    }),
  );
  child.stdout?.on('data', (b: Buffer) => (output += b.toString()));
  child.stderr?.on('data', (b: Buffer) => (output += b.toString()));
  const port = await eventually(
    async () => {
      const m = /"port":(\d+),"msg":"OPI API listening"/.exec(output);
      return m ? Number(m[1]) : undefined;
    },
    'the API to listen',
    30_000,
  );
  expect(output).toContain('using the built-in simulated cluster');
  const base = `http://127.0.0.1:${port}`;
  const g = uuid(1, 'shut');
  const v = uuid(1, 'v1');
  expect((await call(base, 'PUT', `/apps/${g}-${v}`, desireBody(g, v))).status).toBe(202);
  await eventually(
    async () => {
      const r = await call(base, 'GET', `/apps/${g}/${v}/instances`);
      return r.status === 200 && r.text.includes('"RUNNING"');
    },
    'the instance to run',
    30_000,
  );

  child.kill('SIGTERM');
  expect(await exited).toBe(0);
  expect(output).toContain('"msg":"stopped"');
  await expect(fetch(`${base}/apps`)).rejects.toThrow();
}, 90_000);
