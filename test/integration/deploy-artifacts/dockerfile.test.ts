/**
 * The Dockerfile without a container engine: its stages and user, then the image's /app assembled as its
 * last build step does (dev dependencies left out), and the API and a worker started from there as its CMD would.
 */
import { mkdtemp, readFile, rm, stat } from 'node:fs/promises';
import { isBuiltin } from 'node:module';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { randomBytes } from 'node:crypto';
import { FAST_BEHAVIOUR, type Simulator, startSimulator } from '@opi/kube-sim';
import { createRedis } from '@opi/queue';
import {
  type Stage,
  assembleImage,
  execForm,
  parseDockerfile,
  stageEnv as env,
} from '../../support/dockerfile.js';
import { eventually } from '../../support/eventually.js';
import { type Started, freePort, logLine, start } from '../../support/processes.js';
import { deletePrefix } from '../../support/redis-keys.js';
import { read, walk, workerCommand } from '../../support/repo-files.js';

const NODE_IMAGE = 'node:20-bookworm-slim';

describe('Dockerfile', () => {
  let stages: Stage[];
  let build: Stage;
  let runtime: Stage;
  let app: string;
  let sim: Simulator;
  const started: Started[] = [];
  const prefix = `{it-image-${randomBytes(3).toString('hex')}}`;

  beforeAll(async () => {
    stages = parseDockerfile(await read('Dockerfile'));
    const last = stages.at(-1);
    const named = stages.find((s) => s.name === 'build');
    if (!last || !named) throw new Error('the Dockerfile needs a `build` stage and a final stage');
    build = named;
    runtime = last;
    app = await mkdtemp(join(tmpdir(), 'opi-image-'));
    await assembleImage(app, build);
    sim = await startSimulator({ behaviour: FAST_BEHAVIOUR, namespaces: ['cf-workloads'] });
  }, 120_000);

  afterAll(async () => {
    for (const s of started) s.child.kill('SIGKILL');
    await sim?.close();
    if (app) await rm(app, { recursive: true, force: true });
    const redis = createRedis('redis://127.0.0.1:6379');
    await deletePrefix(redis, prefix);
    redis.disconnect();
  });

  it('builds in one stage and runs from another, both on node:20-bookworm-slim', () => {
    expect(stages.length).toBeGreaterThanOrEqual(2);
    expect(new Set(stages.map((s) => s.from))).toEqual(new Set([NODE_IMAGE]));
    expect(runtime).not.toBe(build);
  });

  it('compiles with the lockfile, then drops the dev dependencies before collecting what runs', () => {
    const runs = build.steps.filter((s) => s.op === 'RUN').map((s) => s.args);
    const at = (re: RegExp): number => runs.findIndex((r) => re.test(r));
    const ci = at(/\bnpm ci\b(?!.*--omit)/);
    const compile = at(/\bnpm run build\b/);
    const prune = at(/\bnpm (prune|ci) .*--omit=dev\b/);
    const collect = at(/cp -a package\.json node_modules \/out\//);
    expect([ci, compile, prune, collect].every((i) => i >= 0)).toBe(true);
    expect(ci).toBeLessThan(compile);
    expect(compile).toBeLessThan(prune);
    expect(prune).toBeLessThan(collect);
    // Per workspace only its manifest and compiled code.
    expect(runs[collect]).toContain('for ws in libs/* apps/*');
    expect(runs[collect]).toContain('"$ws/package.json" "$ws/dist"');
  });

  it('runs as a non-root user, in production mode, the API by default', () => {
    expect(env(runtime)).toMatchObject({ NODE_ENV: 'production', HOST: '0.0.0.0' });
    const user = runtime.steps.filter((s) => s.op === 'USER').at(-1)?.args ?? 'root';
    const [uid = ''] = user.split(':');
    // Numeric, so Kubernetes' runAsNonRoot can check it without reading /etc/passwd.
    expect(uid).toMatch(/^\d+$/);
    expect(Number(uid)).not.toBe(0);
    expect(execForm(runtime, 'CMD')).toEqual(['node', 'apps/api/dist/main.js']);
    expect(runtime.steps.find((s) => s.op === 'WORKDIR')?.args).toBe('/app');
  });

  it('copies only the collected output into the runtime stage, and installs nothing there', () => {
    const copies = runtime.steps.filter((s) => s.op === 'COPY' || s.op === 'ADD');
    expect(copies.length).toBeGreaterThan(0);
    for (const c of copies) expect(c.args).toMatch(/^--from=build \/out\/ /);
    expect(runtime.steps.filter((s) => s.op === 'RUN' && /\b(npm|yarn|apt-get)\b/.test(s.args))).toEqual([]);
  });

  it('keeps the build context small (.dockerignore)', async () => {
    const ignored = new Set(
      (await read('.dockerignore'))
        .split('\n')
        .map((l) => l.trim())
        .filter((l) => l && !l.startsWith('#')),
    );
    for (const p of ['**/node_modules', '**/dist', '.git', '.cache', 'test']) expect(ignored).toContain(p);
  });

  it('has every file the image runs after `npm run build` (API, worker, simulated cluster)', async () => {
    for (const main of ['apps/api/dist/main.js', 'apps/worker/dist/main.js', 'apps/sim/dist/main.js']) {
      expect((await stat(join(app, main))).isFile()).toBe(true);
    }
    // Nothing of the tests ships.
    const files = await walk(join(app, 'libs'));
    expect(files.filter((f) => /\.test\.js$|\.map$|\.d\.ts$/.test(f))).toEqual([]);
  });

  it('imports no package that the production install lacks', async () => {
    const missing = new Set<string>();
    const seen = new Set<string>();
    for (const group of ['libs', 'apps']) {
      for (const file of (await walk(join(app, group))).filter((f) => f.endsWith('.js'))) {
        const code = await readFile(file, 'utf8');
        // Statements at the start of a line (not text inside strings), and dynamic imports.
        const specifiers = [
          ...code.matchAll(/^\s*(?:import|export)\b[^'"]*?\bfrom\s*['"]([^'"]+)['"]/gm),
          ...code.matchAll(/^\s*import\s*['"]([^'"]+)['"]/gm),
          ...code.matchAll(/\bimport\(\s*['"]([^'"]+)['"]\s*\)/g),
        ];
        for (const m of specifiers) {
          const spec = m[1] ?? '';
          if (spec.startsWith('.') || spec.startsWith('/') || isBuiltin(spec)) continue;
          const pkg = spec.startsWith('@')
            ? spec.split('/').slice(0, 2).join('/')
            : (spec.split('/')[0] ?? '');
          seen.add(pkg);
          try {
            await stat(join(app, 'node_modules', pkg));
          } catch {
            missing.add(`${pkg} (${relative(app, file)})`);
          }
        }
      }
    }
    expect([...missing]).toEqual([]);
    expect([...seen]).toEqual(
      expect.arrayContaining(['ioredis', 'bullmq', 'express', '@kubernetes/client-node']),
    );
  });

  it('starts the API as the CMD does, with the image environment', async () => {
    const api = start(app, execForm(runtime, 'CMD'), {
      PATH: process.env['PATH'] ?? '',
      ...env(runtime),
      // What an operator adds: Redis, and credentials (the API refuses 0.0.0.0 without them).
      PORT: '0',
      REDIS_URL: 'redis://127.0.0.1:6379',
      OPI_QUEUE_PREFIX: prefix,
      OPI_API_TOKENS: 'image-test-token',
    });
    started.push(api);
    const listening = await eventually(
      async () => logLine(api.output(), 'OPI API listening'),
      'the API to listen',
      20_000,
    ).catch((e: unknown) => {
      throw new Error(`${String(e)}\n${api.output()}`);
    });
    expect(listening['host']).toBe('0.0.0.0');
    const base = `http://127.0.0.1:${String(listening['port'])}`;
    expect((await fetch(`${base}/healthz`)).status).toBe(200);
    const apps = await fetch(`${base}/apps`, { headers: { authorization: 'Bearer image-test-token' } });
    expect(apps.status).toBe(200);
    api.child.kill('SIGTERM');
    expect(await api.exited).toBe(0);
  });

  it('starts a worker as `npm run start:worker` does', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'opi-image-kube-'));
    try {
      await sim.writeKubeconfig(join(dir, 'kubeconfig'));
      const metricsPort = await freePort();
      const worker = start(app, await workerCommand(), {
        PATH: process.env['PATH'] ?? '',
        ...env(runtime),
        REDIS_URL: 'redis://127.0.0.1:6379',
        OPI_QUEUE_PREFIX: prefix,
        KUBECONFIG: join(dir, 'kubeconfig'),
        OPI_METRICS_PORT: String(metricsPort),
      });
      started.push(worker);
      await eventually(
        async () => (await fetch(`http://127.0.0.1:${metricsPort}/readyz`)).status === 200,
        'the worker to be ready',
        20_000,
      ).catch((e: unknown) => {
        throw new Error(`${String(e)}\n${worker.output()}`);
      });
      // Log lines are written in batches, up to a quarter second after the event.
      await eventually(
        () => Promise.resolve(logLine(worker.output(), 'workers started')),
        'the start line',
        5000,
      );
      worker.child.kill('SIGTERM');
      expect(await worker.exited).toBe(0);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
