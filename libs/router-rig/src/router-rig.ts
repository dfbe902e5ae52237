/**
 * Cloud Foundry's real gorouter and a NATS server on loopback, a private pair per caller (a test file, the bench), started
 * with the realrouter rig's own start.sh (built once per machine by its prepare.sh; .ci/run does it).
 * REALROUTER_SCRIPTS names the rig's folder and REALROUTER_BUILT where prepare.sh built it (default
 * /tmp/realrouter). Without them the routing tests and bench rows are skipped, unless
 * OPI_E2E_REQUIRE_ROUTER=1 (CI).
 */
import { execFile, spawn } from 'node:child_process';
import { existsSync, openSync } from 'node:fs';
import { mkdir, mkdtemp, readFile, rm, symlink, writeFile } from 'node:fs/promises';
import { request } from 'node:http';
import { type AddressInfo, createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);

/** A port free on 127.0.0.1 now. */
export function freePort(): Promise<number> {
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

export const RIG_SCRIPTS = process.env['REALROUTER_SCRIPTS'] ?? '';
const BUILT = process.env['REALROUTER_BUILT'] ?? '/tmp/realrouter';

/** Whether the rig can run here; throws when it must (CI) but cannot. */
export function routerRigAvailable(): boolean {
  const ok =
    RIG_SCRIPTS !== '' &&
    existsSync(join(RIG_SCRIPTS, 'start.sh')) &&
    existsSync(join(BUILT, 'bin', 'gorouter'));
  if (!ok && process.env['OPI_E2E_REQUIRE_ROUTER'] === '1') {
    throw new Error(
      `the realrouter rig is required (OPI_E2E_REQUIRE_ROUTER=1) but REALROUTER_SCRIPTS=${RIG_SCRIPTS || '(unset)'} ` +
        `or ${BUILT}/bin/gorouter is missing: run its prepare.sh`,
    );
  }
  return ok;
}

export interface RouterRig {
  natsUrl: string;
  routerUrl: string;
  natsPort: number;
  env: Record<string, string>;
  /** gorouter's routing table: URI → endpoints. */
  routes(): Promise<Record<string, RouterEndpoint[]>>;
  /** One request through gorouter with the given Host. */
  get(
    host: string,
    path?: string,
  ): Promise<{ status: number; body: string; headers: Record<string, string> }>;
  /** gorouter's log lines that refused a message (a message we sent that gorouter could not read). */
  validationErrors(): Promise<string[]>;
  stopRouter(): Promise<void>;
  startRouter(): Promise<void>;
  stopNats(): Promise<void>;
  startNats(): Promise<void>;
  close(): Promise<void>;
}

export interface RouterEndpoint {
  address: string;
  tags?: Record<string, string>;
  private_instance_id?: string;
  ttl?: number;
}

export function isLoopback(address: string): boolean {
  return /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}(:\d+)?$/.test(address);
}

export async function startRouterRig(env: Record<string, string> = {}): Promise<RouterRig> {
  const root = await mkdtemp(join(tmpdir(), 'realrouter-'));
  await symlink(join(BUILT, 'bin'), join(root, 'bin'));
  await mkdir(join(root, 'run'));
  const ports = {
    NATS_PORT: String(await freePort()),
    NATS_MONITOR_PORT: String(await freePort()),
    ROUTER_PORT: String(await freePort()),
    ROUTER_STATUS_PORT: String(await freePort()),
  };
  const rigEnv = { ...process.env, REALROUTER_ROOT: root, ...ports, ...env } as Record<string, string>;
  await run('bash', [join(RIG_SCRIPTS, 'start.sh')], { env: rigEnv, timeout: 60_000 });
  const vars = Object.fromEntries(
    (await readFile(join(root, 'env'), 'utf8'))
      .split('\n')
      .filter((l) => l.includes('='))
      .map((l) => [l.slice(0, l.indexOf('=')), l.slice(l.indexOf('=') + 1)]),
  ) as Record<string, string>;
  const pids = async (): Promise<Map<string, number>> =>
    new Map(
      (await readFile(join(root, 'run', 'pids'), 'utf8').catch(() => ''))
        .split('\n')
        .filter(Boolean)
        .map((l) => l.split(' ') as [string, string])
        .map(([n, p]) => [n, Number(p)]),
    );
  const kill = async (name: string): Promise<void> => {
    const pid = (await pids()).get(name);
    if (pid === undefined) return;
    try {
      process.kill(pid, 'SIGTERM');
    } catch {
      return;
    }
    for (let i = 0; i < 100; i++) {
      try {
        process.kill(pid, 0);
      } catch {
        return;
      }
      await new Promise((r) => setTimeout(r, 50));
    }
    process.kill(pid, 'SIGKILL');
  };
  const relaunch = async (
    name: string,
    cmd: string,
    args: string[],
    log: string,
    ready: () => Promise<boolean>,
  ) => {
    const out = openSync(join(root, 'run', log), 'a');
    const child = spawn(cmd, args, { detached: true, stdio: ['ignore', out, out] });
    child.unref();
    const list = [...(await pids())].filter(([n]) => n !== name).map(([n, p]) => `${n} ${p}`);
    list.push(`${name} ${child.pid ?? 0}`);
    await writeFile(join(root, 'run', 'pids'), `${list.join('\n')}\n`);
    for (let i = 0; i < 200; i++) {
      if (await ready()) return;
      await new Promise((r) => setTimeout(r, 50));
    }
    throw new Error(`${name} did not come back`);
  };
  const statusAuth = `Basic ${Buffer.from(`${vars['ROUTER_STATUS_USER']}:${vars['ROUTER_STATUS_PASS']}`).toString('base64')}`;
  const httpGet = (url: string, headers: Record<string, string>) =>
    new Promise<{ status: number; body: string; headers: Record<string, string> }>((done, fail) => {
      const req = request(url, { headers }, (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => (body += c));
        res.on('end', () => {
          done({ status: res.statusCode ?? 0, body, headers: res.headers as Record<string, string> });
        });
      });
      req.on('error', fail);
      req.setTimeout(5000, () => req.destroy(new Error(`GET ${url} timed out`)));
      req.end();
    });
  const healthy = async (url: string) => {
    try {
      return (await httpGet(url, {})).status === 200;
    } catch {
      return false;
    }
  };
  const rig: RouterRig = {
    natsUrl: vars['NATS_URL'] ?? '',
    routerUrl: vars['ROUTER_URL'] ?? '',
    natsPort: Number(ports.NATS_PORT),
    env: vars,
    routes: async () => {
      const r = await httpGet(`${vars['ROUTER_STATUS_URL']}/routes`, { authorization: statusAuth });
      if (r.status !== 200) throw new Error(`gorouter /routes answered ${r.status}`);
      return JSON.parse(r.body) as Record<string, RouterEndpoint[]>;
    },
    get: (host, path = '/') => httpGet(`${vars['ROUTER_URL']}${path}`, { host }),
    validationErrors: async () =>
      (await readFile(vars['ROUTER_LOG'] ?? '', 'utf8').catch(() => ''))
        .split('\n')
        .filter((l) => l.includes('validation-error')),
    stopRouter: () => kill('gorouter'),
    startRouter: () =>
      relaunch(
        'gorouter',
        join(root, 'bin', 'gorouter'),
        ['-c', vars['ROUTER_CONFIG'] ?? ''],
        'gorouter.log',
        () => healthy(`${vars['ROUTER_STATUS_URL']}/health`),
      ),
    stopNats: () => kill('nats-server'),
    startNats: () =>
      relaunch(
        'nats-server',
        'nats-server',
        ['-a', '127.0.0.1', '-p', ports.NATS_PORT, '-m', ports.NATS_MONITOR_PORT, '-n', 'realrouter-nats'],
        'nats-server.log',
        () => healthy(`${vars['NATS_MONITOR_URL']}/healthz`),
      ),
    close: async () => {
      await run('bash', [join(RIG_SCRIPTS, 'stop.sh')], { env: rigEnv }).catch(() => undefined);
      await rm(root, { recursive: true, force: true });
    },
  };
  return rig;
}
