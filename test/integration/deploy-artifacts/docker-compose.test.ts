/**
 * docker-compose.yml: its services, Redis persistence, the scalable worker and settings that exist; the
 * simulated cluster's command run for real; `docker compose config` when a compose is installed.
 */
import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import yaml from 'js-yaml';
import { eventually } from '../../support/eventually.js';
import { flag, start } from '../../support/processes.js';
import { read, repo, settingsTable, workerCommand } from '../../support/repo-files.js';

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
