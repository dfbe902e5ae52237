/**
 * The deployment artifacts, checked without a container engine:
 * - Dockerfile: its stages and user, then the image's /app assembled as its last build step does (the
 *   dev dependencies left out as `npm prune --omit=dev` leaves them out), and the API and a worker
 *   started from there with the image's environment, as its CMD would.
 * - docker-compose.yml: services, Redis persistence, the scalable worker, settings that exist; the
 *   simulated cluster's command run for real; `docker compose config` when a compose is installed.
 * - k8s/: applied with Debian's kubectl 1.20 (scripts/kubectl.sh) to the simulated cluster, then read
 *   back; the workers' Role must equal what the code sends, derived from the sources and the adapter.
 */
import { type ChildProcess, execFile, execFileSync, spawn } from 'node:child_process';
import { cp, mkdir, mkdtemp, readFile, readdir, rm, stat, symlink } from 'node:fs/promises';
import { isBuiltin } from 'node:module';
import { type AddressInfo, createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { basename, dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { randomBytes } from 'node:crypto';
import yaml from 'js-yaml';
import { ClientNodeKubernetes, type KubeCallReport, type KubernetesPort, loadKubeConfig } from '@opi/kube';
import { FAST_BEHAVIOUR, ResourceRegistry, type Simulator, startSimulator } from '@opi/kube-sim';
import { QUEUE_STATES, createMetrics } from '@opi/metrics';
import { QUEUE_NAMES, createRedis } from '@opi/queue';
import { eventually } from '../support/eventually.js';
import { deletePrefix } from '../support/redis-keys.js';

const repo = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const NODE_IMAGE = 'node:20-bookworm-slim';

const read = (path: string): Promise<string> => readFile(join(repo, path), 'utf8');

/** `npm run start:worker` as argv: the one place the worker's Node flags are chosen. */
async function workerCommand(): Promise<string[]> {
  const pkg = JSON.parse(await read('package.json')) as { scripts: Record<string, string> };
  return (pkg.scripts['start:worker'] ?? '').split(/\s+/);
}

/** Every variable the settings table of docs/operations.md names (first column, in backticks). */
async function settingsTable(): Promise<Set<string>> {
  const lines = (await read('docs/operations.md')).split('\n');
  const start = lines.findIndex((l) => /^\|\s*Variable\s*\|/.test(l));
  expect(start).toBeGreaterThan(0);
  const names = new Set<string>();
  for (const line of lines.slice(start + 2)) {
    if (!line.startsWith('|')) break;
    const first = line.split('|')[1] ?? '';
    for (const m of first.matchAll(/`([A-Z][A-Z0-9_]*)`/g)) if (m[1]) names.add(m[1]);
  }
  return names;
}

function freePort(): Promise<number> {
  return new Promise((done, fail) => {
    const s = createServer();
    s.once('error', fail);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address() as AddressInfo;
      s.close(() => {
        done(port);
      });
    });
  });
}

// --- Dockerfile ------------------------------------------------------------------------------------------

interface Instruction {
  op: string;
  args: string;
}
interface Stage {
  from: string;
  name: string | undefined;
  steps: Instruction[];
}

/** Instructions with continuation lines joined and comments dropped; ARG defaults substituted in FROM. */
function parseDockerfile(text: string): Stage[] {
  const joined = text
    .split('\n')
    .filter((l) => !/^\s*#/.test(l))
    .join('\n')
    .replace(/\\\n/g, ' ');
  const args: Record<string, string> = {};
  const stages: Stage[] = [];
  for (const line of joined.split('\n')) {
    const m = /^\s*([A-Z]+)\s+(.*)$/.exec(line);
    if (!m?.[1]) continue;
    const op = m[1];
    const rest = (m[2] ?? '').trim();
    if (op === 'ARG' && stages.length === 0) {
      const [k, v] = rest.split('=');
      if (k && v !== undefined) args[k] = v;
    } else if (op === 'FROM') {
      const [image = '', as, name] = rest.split(/\s+/);
      const from = image.replace(/\$\{(\w+)\}/g, (_, k: string) => args[k] ?? '');
      stages.push({ from, name: as?.toUpperCase() === 'AS' ? name : undefined, steps: [] });
    } else {
      stages.at(-1)?.steps.push({ op, args: rest });
    }
  }
  return stages;
}

function env(stage: Stage): Record<string, string> {
  const out: Record<string, string> = {};
  for (const s of stage.steps.filter((x) => x.op === 'ENV')) {
    for (const m of s.args.matchAll(/(\w+)=("[^"]*"|\S+)/g)) {
      if (m[1] && m[2]) out[m[1]] = m[2].replace(/^"|"$/g, '');
    }
  }
  return out;
}

function execForm(stage: Stage, op: string): string[] {
  const step = stage.steps.filter((s) => s.op === op).at(-1);
  expect(step).toBeDefined();
  return JSON.parse(step?.args ?? '[]') as string[];
}

/** `find -name` patterns the Dockerfile deletes from the image, as regular expressions. */
function deletedPatterns(stage: Stage): RegExp[] {
  const find = stage.steps.find((s) => s.op === 'RUN' && s.args.includes('find /out'));
  expect(find).toBeDefined();
  return [...(find?.args ?? '').matchAll(/-name '([^']+)'/g)].map(
    (m) => new RegExp(`^${(m[1] ?? '').replace(/[.+^${}()|[\]\\]/g, '\\$&').replace(/\*/g, '.*')}$`),
  );
}

interface LockPackage {
  dev?: boolean;
  link?: boolean;
  resolved?: string;
}

async function walk(dir: string): Promise<string[]> {
  const out: string[] = [];
  for (const e of await readdir(dir, { withFileTypes: true })) {
    const p = join(dir, e.name);
    if (e.isDirectory()) out.push(...(await walk(p)));
    else out.push(p);
  }
  return out;
}

/**
 * The image's /app, as the build stage leaves /out: package.json; node_modules without what the lockfile
 * marks dev-only (what `npm prune --omit=dev` removes), its packages linked to this checkout's copies and
 * the workspaces linked inside; per workspace its package.json and dist, minus what `find` deletes.
 */
async function assembleImage(dest: string, build: Stage): Promise<void> {
  const lock = JSON.parse(await read('package-lock.json')) as { packages: Record<string, LockPackage> };
  await cp(join(repo, 'package.json'), join(dest, 'package.json'));
  await mkdir(join(dest, 'node_modules'));
  for (const [key, pkg] of Object.entries(lock.packages)) {
    // Top-level packages only: nested ones come along inside their parent.
    const m = /^node_modules\/((?:@[^/]+\/)?[^/]+)$/.exec(key);
    if (!m?.[1] || pkg.dev) continue;
    const target = join(dest, 'node_modules', m[1]);
    await mkdir(dirname(target), { recursive: true });
    if (pkg.link && pkg.resolved) await symlink(relative(dirname(target), join(dest, pkg.resolved)), target);
    else await symlink(join(repo, key), target);
  }
  const drop = deletedPatterns(build);
  for (const group of ['libs', 'apps']) {
    for (const ws of await readdir(join(repo, group))) {
      const from = join(repo, group, ws);
      const to = join(dest, group, ws);
      await mkdir(to, { recursive: true });
      await cp(join(from, 'package.json'), join(to, 'package.json'));
      await cp(join(from, 'dist'), join(to, 'dist'), {
        recursive: true,
        filter: (src) => !drop.some((re) => re.test(src.split('/').at(-1) ?? '')),
      });
    }
  }
}

interface Started {
  child: ChildProcess;
  output: () => string;
  exited: Promise<number | null>;
}

function start(cwd: string, argv: string[], childEnv: Record<string, string>): Started {
  const [cmd = '', ...args] = argv;
  // `node` as the image's PATH finds it: this very Node.
  const child = spawn(cmd === 'node' ? process.execPath : cmd, args, {
    cwd,
    env: childEnv,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout.on('data', (b: Buffer) => (output += b.toString()));
  child.stderr.on('data', (b: Buffer) => (output += b.toString()));
  const exited = new Promise<number | null>((done) => {
    child.once('exit', (code) => {
      done(code);
    });
  });
  return { child, output: () => output, exited };
}

/** The first JSON log line with this message. */
function logLine(output: string, msg: string): Record<string, unknown> | undefined {
  for (const line of output.split('\n')) {
    if (!line.includes(msg)) continue;
    try {
      const o = JSON.parse(line) as Record<string, unknown>;
      if (o['msg'] === msg) return o;
    } catch {
      // not a log line
    }
  }
  return undefined;
}

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

// --- docker-compose.yml ----------------------------------------------------------------------------------

interface ComposeService {
  image?: string;
  build?: unknown;
  command?: string[];
  environment?: Record<string, string>;
  ports?: unknown[];
  volumes?: string[];
  container_name?: string;
  healthcheck?: { test: string[] };
  depends_on?: Record<string, { condition: string }>;
}
interface Compose {
  services: Record<string, ComposeService>;
  volumes?: Record<string, unknown>;
}

function flag(command: string[] | undefined, name: string): string | undefined {
  const i = (command ?? []).indexOf(name);
  return i >= 0 ? command?.[i + 1] : undefined;
}

describe('docker-compose.yml', () => {
  let compose: Compose;

  beforeAll(async () => {
    compose = yaml.load(await read('docker-compose.yml')) as Compose;
  });

  it('has Redis, the simulated cluster, the API and the workers, each with a healthcheck', () => {
    expect(Object.keys(compose.services).sort()).toEqual(['api', 'redis', 'sim', 'worker']);
    for (const [name, svc] of Object.entries(compose.services)) {
      expect([name, svc.healthcheck?.test[0]]).toEqual([name, 'CMD']);
    }
  });

  it('persists Redis with AOF every second, never evicting, on a volume', () => {
    const redis = compose.services['redis'];
    const cmd = redis?.command ?? [];
    expect(flag(cmd, '--appendonly')).toBe('yes');
    expect(flag(cmd, '--appendfsync')).toBe('everysec');
    expect(flag(cmd, '--maxmemory-policy')).toBe('noeviction');
    const [volume, path] = (redis?.volumes?.[0] ?? '').split(':');
    expect(path).toBe('/data');
    expect(Object.keys(compose.volumes ?? {})).toContain(volume);
  });

  it('lets the worker scale: no container_name, no published port', async () => {
    const worker = compose.services['worker'];
    expect(worker?.command).toEqual(await workerCommand());
    expect(worker?.container_name).toBeUndefined();
    expect(worker?.ports).toBeUndefined();
    for (const svc of Object.values(compose.services)) expect(svc.container_name).toBeUndefined();
  });

  it('runs the API and the worker from the one image, against the Redis and cluster services', () => {
    const { api, worker, sim } = compose.services;
    expect(api?.image).toBe(worker?.image);
    expect(sim?.image).toBe(api?.image);
    expect(api?.command).toBeUndefined(); // the image's CMD: the API
    expect(new URL(api?.environment?.['REDIS_URL'] ?? '').hostname).toBe('redis');
    expect(new URL(worker?.environment?.['REDIS_URL'] ?? '').hostname).toBe('redis');
    expect(worker?.depends_on).toMatchObject({
      redis: { condition: 'service_healthy' },
      sim: { condition: 'service_healthy' },
    });
    // The worker reads the kubeconfig the simulator writes, through the shared volume.
    const kubeconfig = flag(sim?.command, '--kubeconfig') ?? '';
    expect(worker?.environment?.['KUBECONFIG']).toBe(kubeconfig);
    const shared = (v: string | undefined): string[] => (v ?? '').split(':').slice(0, 2);
    const simVolume = shared(sim?.volumes?.[0]);
    expect(simVolume[1]).toBe(dirname(kubeconfig));
    expect(shared(worker?.volumes?.[0])).toEqual(simVolume);
  });

  it('names only settings that exist (the settings table)', async () => {
    const table = await settingsTable();
    const named = Object.entries(compose.services)
      .filter(([name]) => name !== 'redis')
      .flatMap(([, svc]) => Object.keys(svc.environment ?? {}));
    expect(named.filter((n) => !table.has(n))).toEqual([]);
  });

  it("writes a kubeconfig naming the service host, not the address it binds (the sim's command, run)", async () => {
    const sim = compose.services['sim'];
    const dir = await mkdtemp(join(tmpdir(), 'opi-compose-sim-'));
    const file = join(dir, 'kubeconfig');
    const argv = (sim?.command ?? []).map((a) =>
      a === flag(sim?.command, '--port') ? '0' : a === flag(sim?.command, '--kubeconfig') ? file : a,
    );
    expect(flag(argv, '--host')).toBe('0.0.0.0');
    const run = start(repo, argv, { PATH: process.env['PATH'] ?? '' });
    try {
      const text = await eventually(
        async () => readFile(file, 'utf8').catch(() => undefined),
        'the kubeconfig',
        20_000,
      );
      const doc = yaml.load(text) as { clusters: { cluster: { server: string } }[] };
      expect(new URL(doc.clusters[0]?.cluster.server ?? '').hostname).toBe('sim');
    } finally {
      run.child.kill('SIGTERM');
      await run.exited;
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('passes `docker compose config` where a compose is installed', async () => {
    const candidates: string[][] = [['docker', 'compose'], ['docker-compose']];
    for (const [cmd = '', ...pre] of candidates) {
      const ok = await new Promise<boolean>((done) => {
        execFile(cmd, [...pre, 'version'], (err) => {
          done(!err);
        });
      });
      if (!ok) continue;
      const out = await new Promise<{ code: number; stderr: string }>((done) => {
        execFile(cmd, [...pre, '-f', join(repo, 'docker-compose.yml'), 'config', '-q'], (err, _o, stderr) => {
          done({ code: err ? 1 : 0, stderr });
        });
      });
      expect(out).toEqual({ code: 0, stderr: '' });
      return;
    }
    process.stdout.write('no docker compose on this machine: `docker compose config` not run\n');
  });
});

// --- k8s/ ------------------------------------------------------------------------------------------------

interface Meta {
  name: string;
  namespace?: string;
  labels?: Record<string, string>;
}
interface K8sObject {
  apiVersion: string;
  kind: string;
  metadata: Meta;
  [key: string]: unknown;
}
interface Probe {
  httpGet?: { path: string; port: string | number };
  exec?: { command: string[] };
}
interface Container {
  name: string;
  image: string;
  command?: string[];
  args?: string[];
  env?: { name: string }[];
  envFrom?: { configMapRef?: { name: string }; secretRef?: { name: string } }[];
  ports?: { name?: string; containerPort: number }[];
  livenessProbe?: Probe;
  readinessProbe?: Probe;
  startupProbe?: Probe;
  resources?: { requests?: Record<string, string>; limits?: Record<string, string> };
  securityContext?: {
    allowPrivilegeEscalation?: boolean;
    readOnlyRootFilesystem?: boolean;
    runAsNonRoot?: boolean;
    capabilities?: { drop?: string[] };
  };
}
interface PodSpec {
  serviceAccountName?: string;
  automountServiceAccountToken?: boolean;
  securityContext?: { runAsNonRoot?: boolean; runAsUser?: number };
  containers: Container[];
}
interface Workload extends K8sObject {
  spec: {
    replicas?: number;
    template: { spec: PodSpec };
    volumeClaimTemplates?: { metadata: { name: string } }[];
  };
}
interface Rule {
  apiGroups: string[];
  resources: string[];
  verbs: string[];
  resourceNames?: string[];
  nonResourceURLs?: string[];
}

describe('k8s/ on the simulated cluster (kubectl 1.20 apply -k)', () => {
  let bin: string;
  let sim: Simulator;
  let dir: string;
  let kubeconfig: string;
  let applied: string;
  let config: Record<string, string>;

  function kubectl(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
    const argv = [
      '--kubeconfig',
      kubeconfig,
      '--cache-dir',
      join(dir, 'cache'),
      '--request-timeout=30s',
      ...args,
    ];
    return new Promise((done) => {
      execFile(
        bin,
        argv,
        { cwd: repo, env: { ...process.env, HOME: dir }, timeout: 120_000, maxBuffer: 16 << 20 },
        (err, stdout, stderr) => {
          done({ code: err ? (typeof err.code === 'number' ? err.code : -1) : 0, stdout, stderr });
        },
      );
    });
  }
  async function ok(args: string[]): Promise<string> {
    const r = await kubectl(args);
    if (r.code !== 0) throw new Error(`kubectl ${args.join(' ')} exited ${r.code}: ${r.stderr}`);
    return r.stdout;
  }
  async function get<T = K8sObject>(kind: string, name: string, namespace: string): Promise<T> {
    return JSON.parse(await ok(['get', kind, name, '-n', namespace, '-o', 'json'])) as T;
  }
  const container = (w: Workload, name: string): Container => {
    const c = w.spec.template.spec.containers.find((x) => x.name === name);
    if (!c) throw new Error(`no container ${name} in ${w.metadata.name}`);
    return c;
  };
  const portOf = (c: Container, port: string | number | undefined): number | undefined =>
    typeof port === 'number' ? port : c.ports?.find((p) => p.name === port)?.containerPort;

  beforeAll(async () => {
    // Synchronous is fine: nothing in-process serves yet. The first run downloads the package.
    bin = execFileSync(join(repo, 'scripts/kubectl.sh'), { encoding: 'utf8' }).trim();
    sim = await startSimulator({ behaviour: FAST_BEHAVIOUR, seed: 11 });
    dir = await mkdtemp(join(tmpdir(), 'opi-k8s-'));
    kubeconfig = join(dir, 'kubeconfig');
    await sim.writeKubeconfig(kubeconfig);
    applied = await ok(['apply', '-k', 'k8s/']);
    config = (
      await get<K8sObject & { data: Record<string, string> }>('configmap', 'opi-config', 'opi-system')
    ).data;
  }, 300_000);

  afterAll(async () => {
    await sim?.close();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('creates every object, and a second apply changes nothing', async () => {
    const created = applied.trim().split('\n');
    expect(created.every((l) => l.endsWith(' created'))).toBe(true);
    expect(created.map((l) => l.split(' ')[0]).sort()).toEqual(
      [
        'configmap/opi-config',
        'deployment.apps/opi-api',
        'deployment.apps/opi-worker',
        'horizontalpodautoscaler.autoscaling/opi-worker',
        'namespace/cf-workloads',
        'namespace/opi-system',
        'networkpolicy.networking.k8s.io/opi-api',
        'networkpolicy.networking.k8s.io/opi-default-deny-ingress',
        'networkpolicy.networking.k8s.io/opi-redis',
        'networkpolicy.networking.k8s.io/opi-worker',
        'poddisruptionbudget.policy/opi-api',
        'role.rbac.authorization.k8s.io/opi-worker',
        'rolebinding.rbac.authorization.k8s.io/opi-worker',
        'secret/opi-credentials',
        'service/opi-api',
        'service/opi-redis',
        'serviceaccount/opi-api',
        'serviceaccount/opi-worker',
        'statefulset.apps/opi-redis',
      ].sort(),
    );
    const again = (await ok(['apply', '-k', 'k8s/'])).trim().split('\n');
    // kubectl re-sends a Secret's stringData on every apply (a real cluster says "configured" too).
    expect(again.filter((l) => !l.endsWith(' unchanged') && !l.startsWith('secret/'))).toEqual([]);
  });

  it('grants nothing cluster-wide and stays in its two namespaces', async () => {
    const docs = yaml.loadAll(await ok(['kustomize', 'k8s/'])) as K8sObject[];
    expect(docs.filter((d) => d.kind.startsWith('Cluster'))).toEqual([]);
    const namespaces = new Set(docs.filter((d) => d.kind !== 'Namespace').map((d) => d.metadata.namespace));
    expect(namespaces).toEqual(new Set(['opi-system', 'cf-workloads']));
  });

  it('gives the workers a Role with exactly the verbs the code sends', async () => {
    // Which port methods the service calls: the port is `kube` wherever it is used (deps.kube, kube).
    const port = await read('libs/kube/src/port.ts');
    const body = port.slice(port.indexOf('export interface KubernetesPort'));
    const methods = [...body.matchAll(/^ {2}(\w+)(?:<[^(]*>)?\(/gm)].map((m) => m[1] ?? '');
    // libs/kube holds callers too (the reflectors, the leader election), but not its own implementations
    // of the port, which call nothing through it.
    const implementations = new Set(['client-node-adapter.ts', 'fake.ts', 'port.ts']);
    const sources: string[] = [];
    for (const group of ['apps', 'libs']) {
      for (const ws of await readdir(join(repo, group))) {
        if (group === 'libs' && ws === 'kube-sim') continue;
        const src = join(repo, group, ws, 'src');
        const files = await walk(src).catch(() => []);
        for (const f of files.filter((x) => x.endsWith('.ts') && !/\.(test|fixture)\.ts$/.test(x))) {
          if (group === 'libs' && ws === 'kube' && implementations.has(basename(f))) continue;
          sources.push(await readFile(f, 'utf8'));
        }
      }
    }
    const used = methods.filter((m) =>
      sources.some((s) => new RegExp(`\\bkube\\s*\\.\\s*${m}\\s*\\(`).test(s)),
    );
    expect(used).toEqual(expect.arrayContaining(['createDeployment', 'listPods', 'createJob']));

    // What each of those sends, from the adapter itself (the answers do not matter, only the requests).
    const ns = config['OPI_NAMESPACE'] ?? '';
    const named = { metadata: { name: 'rbac-probe' } };
    const exercise: { [K in keyof KubernetesPort]: (k: KubernetesPort) => Promise<unknown> } = {
      getDeployment: (k) => k.getDeployment(ns, 'x'),
      createDeployment: (k) =>
        k.createDeployment(ns, { apiVersion: 'apps/v1', kind: 'Deployment', ...named }),
      replaceDeployment: (k) =>
        k.replaceDeployment(ns, { apiVersion: 'apps/v1', kind: 'Deployment', ...named }),
      deleteDeployment: (k) => k.deleteDeployment(ns, 'x'),
      listDeployments: (k) => k.listDeployments(ns),
      getStatefulSet: (k) => k.getStatefulSet(ns, 'x'),
      createStatefulSet: (k) =>
        k.createStatefulSet(ns, { apiVersion: 'apps/v1', kind: 'StatefulSet', ...named }),
      replaceStatefulSet: (k) =>
        k.replaceStatefulSet(ns, { apiVersion: 'apps/v1', kind: 'StatefulSet', ...named }),
      deleteStatefulSet: (k) => k.deleteStatefulSet(ns, 'x'),
      listStatefulSets: (k) => k.listStatefulSets(ns),
      getSecret: (k) => k.getSecret(ns, 'x'),
      createSecret: (k) => k.createSecret(ns, { apiVersion: 'v1', kind: 'Secret', ...named }),
      replaceSecret: (k) => k.replaceSecret(ns, { apiVersion: 'v1', kind: 'Secret', ...named }),
      deleteSecret: (k) => k.deleteSecret(ns, 'x'),
      getPodDisruptionBudget: (k) => k.getPodDisruptionBudget(ns, 'x'),
      createPodDisruptionBudget: (k) =>
        k.createPodDisruptionBudget(ns, { apiVersion: 'policy/v1', kind: 'PodDisruptionBudget', ...named }),
      replacePodDisruptionBudget: (k) =>
        k.replacePodDisruptionBudget(ns, { apiVersion: 'policy/v1', kind: 'PodDisruptionBudget', ...named }),
      deletePodDisruptionBudget: (k) => k.deletePodDisruptionBudget(ns, 'x'),
      getJob: (k) => k.getJob(ns, 'x'),
      createJob: (k) => k.createJob(ns, { apiVersion: 'batch/v1', kind: 'Job', ...named }),
      replaceJob: (k) => k.replaceJob(ns, { apiVersion: 'batch/v1', kind: 'Job', ...named }),
      deleteJob: (k) => k.deleteJob(ns, 'x'),
      listJobs: (k) => k.listJobs(ns),
      annotateJob: (k) => k.annotateJob(ns, 'x', { a: 'b' }),
      listPods: (k) => k.listPods(ns),
      deletePod: (k) => k.deletePod(ns, 'x'),
      getPod: (k) => k.getPod(ns, 'x'),
      annotatePod: (k) => k.annotatePod(ns, 'x', { a: 'b' }),
      listEvents: (k) => k.listEvents(ns),
      getNamespace: (k) => k.getNamespace(ns),
      getServerVersion: (k) => k.getServerVersion(),
      // One stream of each watched kind, stopped once it is open: the report comes when it ends.
      watch: async (k) => {
        for (const resource of ['deployments', 'statefulsets', 'pods', 'jobs'] as const) {
          const w = k.watch(resource, ns, { timeoutSeconds: 5 }, () => undefined);
          await new Promise((resolve) => setTimeout(resolve, 100));
          w.stop();
          await w.done;
        }
      },
      getLease: (k) => k.getLease(ns, 'x'),
      createLease: (k) =>
        k.createLease(ns, { apiVersion: 'coordination.k8s.io/v1', kind: 'Lease', ...named }),
      replaceLease: (k) =>
        k.replaceLease(ns, { apiVersion: 'coordination.k8s.io/v1', kind: 'Lease', ...named }),
    };
    expect(Object.keys(exercise).sort()).toEqual([...methods].sort());
    const calls: KubeCallReport[] = [];
    const kube = new ClientNodeKubernetes(loadKubeConfig({ kubeconfigYaml: sim.kubeconfig() }), {
      onCall: (c) => calls.push(c),
    });
    const registry = new ResourceRegistry();
    const expected = new Set<string>();
    for (const m of used) {
      calls.length = 0;
      await exercise[m as keyof KubernetesPort](kube).catch(() => undefined);
      expect([m, calls.length > 0]).toEqual([m, true]);
      for (const c of calls) {
        // /version is no resource: every client may read it (the system:public-info-viewer ClusterRole).
        if (c.resource === 'version') continue;
        const group = registry.types.find((t) => t.plural === c.resource)?.group;
        expect([c.resource, group]).toEqual([c.resource, expect.any(String)]);
        expected.add(`${group ?? ''}/${c.resource}:${c.verb}`);
      }
    }

    const role = await get<K8sObject & { rules: Rule[] }>('role', 'opi-worker', ns);
    const granted = new Set<string>();
    for (const r of role.rules) {
      expect(r.resourceNames ?? r.nonResourceURLs).toBeUndefined();
      for (const g of r.apiGroups)
        for (const res of r.resources) for (const v of r.verbs) granted.add(`${g}/${res}:${v}`);
    }
    expect([...granted].sort()).toEqual([...expected].sort());

    const binding = await get<K8sObject & { roleRef: { kind: string; name: string }; subjects: Meta[] }>(
      'rolebinding',
      'opi-worker',
      ns,
    );
    expect(binding.roleRef).toMatchObject({ kind: 'Role', name: 'opi-worker' });
    expect(binding.subjects).toEqual([
      { kind: 'ServiceAccount', name: 'opi-worker', namespace: 'opi-system' },
    ]);
    // A namespaced Role can only list one namespace: the sync must stay there.
    expect(config['OPI_SYNC_ALL_NAMESPACES']).toBe('false');
  });

  it('runs the workers under that account and the API with no token at all', async () => {
    const worker = await get<Workload>('deployment', 'opi-worker', 'opi-system');
    const api = await get<Workload>('deployment', 'opi-api', 'opi-system');
    expect(worker.spec.template.spec.serviceAccountName).toBe('opi-worker');
    expect(api.spec.template.spec.serviceAccountName).toBe('opi-api');
    expect(api.spec.template.spec.automountServiceAccountToken).toBe(false);
    expect(container(worker, 'worker').command).toEqual(await workerCommand());
    // The API runs the image's CMD.
    expect(container(api, 'api').command).toBeUndefined();
  });

  it('probes /healthz and /readyz on the ports the settings open', async () => {
    const cases: [Workload, string, string][] = [
      [await get<Workload>('deployment', 'opi-api', 'opi-system'), 'api', 'OPI_ADMIN_PORT'],
      [await get<Workload>('deployment', 'opi-worker', 'opi-system'), 'worker', 'OPI_METRICS_PORT'],
    ];
    for (const [w, name, setting] of cases) {
      const c = container(w, name);
      const port = Number(config[setting]);
      expect(port).toBeGreaterThan(0);
      expect(c.livenessProbe?.httpGet?.path).toBe('/healthz');
      expect(c.readinessProbe?.httpGet?.path).toBe('/readyz');
      expect(portOf(c, c.livenessProbe?.httpGet?.port)).toBe(port);
      expect(portOf(c, c.readinessProbe?.httpGet?.port)).toBe(port);
      expect(c.envFrom).toEqual([
        { configMapRef: { name: 'opi-config' } },
        { secretRef: { name: 'opi-credentials' } },
      ]);
    }
    const service = await get<K8sObject & { spec: { ports: { port: number; targetPort: string }[] } }>(
      'service',
      'opi-api',
      'opi-system',
    );
    const api = cases[0]![0];
    expect(portOf(container(api, 'api'), service.spec.ports[0]?.targetPort)).toBe(Number(config['PORT']));
  });

  it('runs every container non-root, read-only, without privileges, with resources', async () => {
    const workloads = [
      await get<Workload>('deployment', 'opi-api', 'opi-system'),
      await get<Workload>('deployment', 'opi-worker', 'opi-system'),
      await get<Workload>('statefulset', 'opi-redis', 'opi-system'),
    ];
    for (const w of workloads) {
      const pod = w.spec.template.spec;
      expect([w.metadata.name, pod.securityContext?.runAsNonRoot]).toEqual([w.metadata.name, true]);
      expect(pod.securityContext?.runAsUser).toBeGreaterThan(0);
      for (const c of pod.containers) {
        expect([c.name, c.securityContext]).toMatchObject([
          c.name,
          { allowPrivilegeEscalation: false, readOnlyRootFilesystem: true, capabilities: { drop: ['ALL'] } },
        ]);
        expect(c.resources?.requests?.['cpu']).toBeDefined();
        expect(c.resources?.requests?.['memory']).toBeDefined();
        expect(c.resources?.limits?.['memory']).toBeDefined();
      }
    }
  });

  it('runs Redis as a StatefulSet on a claimed volume, AOF every second, never evicting', async () => {
    const redis = await get<Workload>('statefulset', 'opi-redis', 'opi-system');
    expect(redis.spec.volumeClaimTemplates?.map((v) => v.metadata.name)).toEqual(['data']);
    const args = container(redis, 'redis').args;
    expect(flag(args, '--appendonly')).toBe('yes');
    expect(flag(args, '--appendfsync')).toBe('everysec');
    expect(flag(args, '--maxmemory-policy')).toBe('noeviction');
    expect(flag(args, '--requirepass')).toBe('$(REDIS_PASSWORD)');
    await get('pvc', 'data-opi-redis-0', 'opi-system');
    expect(new URL(config['REDIS_URL'] ?? '').hostname).toBe('opi-redis');
    // Hash-tagged from the start: a later move to Redis Cluster keeps the keys.
    expect(config['OPI_QUEUE_PREFIX']).toBe('{opi}');
  });

  it('scales the workers on waiting jobs (autoscaling/v2, an External metric the service exports)', async () => {
    interface Hpa extends K8sObject {
      spec: {
        scaleTargetRef: { apiVersion: string; kind: string; name: string };
        minReplicas: number;
        maxReplicas: number;
        metrics: {
          type: string;
          external?: {
            metric: {
              name: string;
              selector: {
                matchLabels?: Record<string, string>;
                matchExpressions?: { key: string; operator: string; values: string[] }[];
              };
            };
            target: { type: string; averageValue?: string };
          };
        }[];
      };
    }
    const hpa = await get<Hpa>('hpa', 'opi-worker', 'opi-system');
    expect(hpa.apiVersion).toBe('autoscaling/v2');
    expect(hpa.spec.scaleTargetRef).toEqual({
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      name: 'opi-worker',
    });
    expect(hpa.spec.minReplicas).toBeGreaterThanOrEqual(2);
    expect(hpa.spec.maxReplicas).toBeGreaterThan(hpa.spec.minReplicas);
    const [metric] = hpa.spec.metrics;
    expect(metric?.type).toBe('External');
    const ext = metric?.external;
    expect(ext?.target.type).toBe('AverageValue');
    // The metric, its labels and their values are the service's own.
    const exposed = (await createMetrics().expose()).body;
    expect(exposed).toContain(`# TYPE ${ext?.metric.name ?? ''} gauge`);
    expect(ext?.metric.selector.matchLabels).toEqual({ state: 'waiting' });
    expect(QUEUE_STATES).toContain('waiting');
    const queues = ext?.metric.selector.matchExpressions?.find((e) => e.key === 'queue');
    expect(queues?.operator).toBe('In');
    for (const q of queues?.values ?? []) expect(Object.values(QUEUE_NAMES)).toContain(q);
    // The worker Deployment leaves the count to the HPA, so an apply does not reset it.
    expect((await readFile(join(repo, 'k8s/worker.yaml'), 'utf8')).match(/^\s+replicas:/m)).toBeNull();
  });

  it('keeps an API pod through disruptions', async () => {
    const pdb = await get<
      K8sObject & { spec: { minAvailable: number; selector: { matchLabels: Record<string, string> } } }
    >('pdb', 'opi-api', 'opi-system');
    const api = await get<Workload & { spec: { selector: { matchLabels: Record<string, string> } } }>(
      'deployment',
      'opi-api',
      'opi-system',
    );
    expect(pdb.apiVersion).toBe('policy/v1');
    expect(pdb.spec.minAvailable).toBeGreaterThanOrEqual(1);
    expect(pdb.spec.selector.matchLabels).toEqual(api.spec.selector.matchLabels);
    expect(api.spec.replicas).toBeGreaterThan(pdb.spec.minAvailable);
  });

  it('lets CC reach the API, only the API and workers reach Redis, monitoring reach the metrics', async () => {
    interface Peer {
      namespaceSelector?: { matchLabels?: Record<string, string> };
      podSelector?: { matchExpressions?: { key: string; operator: string; values: string[] }[] };
    }
    interface NetPol extends K8sObject {
      spec: {
        podSelector: { matchLabels?: Record<string, string> };
        policyTypes: string[];
        ingress?: { from: Peer[]; ports: { port: number }[] }[];
      };
    }
    const np = (name: string) => get<NetPol>('networkpolicy', name, 'opi-system');
    const rules = (p: NetPol) =>
      (p.spec.ingress ?? []).map((i) => ({
        from: i.from.map(
          (f) =>
            f.namespaceSelector?.matchLabels?.['kubernetes.io/metadata.name'] ??
            f.podSelector?.matchExpressions
              ?.find((e) => e.key === 'app.kubernetes.io/component')
              ?.values.join(','),
        ),
        ports: i.ports.map((x) => x.port),
      }));
    const deny = await np('opi-default-deny-ingress');
    expect(deny.spec).toEqual({ podSelector: {}, policyTypes: ['Ingress'] });
    const admin = Number(config['OPI_ADMIN_PORT']);
    const metrics = Number(config['OPI_METRICS_PORT']);
    expect(rules(await np('opi-api'))).toEqual([
      { from: ['cf-system'], ports: [Number(config['PORT'])] },
      { from: ['monitoring'], ports: [admin] },
    ]);
    expect(rules(await np('opi-worker'))).toEqual([{ from: ['monitoring'], ports: [metrics] }]);
    expect(rules(await np('opi-redis'))).toEqual([{ from: ['api,worker'], ports: [6379] }]);
  });

  it('names only settings that exist (the settings table), and keeps credentials in the Secret', async () => {
    const table = await settingsTable();
    const secret = await get<K8sObject & { data: Record<string, string> }>(
      'secret',
      'opi-credentials',
      'opi-system',
    );
    const names = [...Object.keys(config), ...Object.keys(secret.data)];
    for (const [kind, name, c] of [
      ['deployment', 'opi-api', 'api'],
      ['deployment', 'opi-worker', 'worker'],
    ] as const) {
      names.push(
        ...(container(await get<Workload>(kind, name, 'opi-system'), c).env ?? []).map((e) => e.name),
      );
    }
    expect(names.filter((n) => !table.has(n))).toEqual([]);
    expect(Object.keys(config).filter((k) => /PASSWORD|TOKEN/.test(k))).toEqual([]);
    // Placeholders only: no credential ships with a value.
    expect(Object.values(secret.data).filter((v) => v !== '')).toEqual([]);
  });

  it('rolls out on the cluster', async () => {
    for (const w of ['deployment/opi-api', 'deployment/opi-worker', 'statefulset/opi-redis']) {
      await ok(['rollout', 'status', w, '-n', 'opi-system', '--timeout=60s']);
    }
  });
});
