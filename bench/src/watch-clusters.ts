/**
 * The clusters the watch scenario runs on: the simulated one, or a real API server named by a kubeconfig
 * (a namespace of its own, its kube-apiserver and etcd found for their CPU); each reached through a
 * counting proxy, seeded and cleaned up the same way.
 */
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { KubeConfig } from '@kubernetes/client-node';
import { deploymentAt, podBody, runningStatus, seconds, storeLrp } from './app-objects.js';
import { inLanes, log, sleep } from './common.js';
import { type CountingProxy, startCountingProxy } from './kube-proxy.js';
import { cpuSeconds } from './processes.js';
import type { Seeded } from './seeding.js';
import { startSim } from './service.js';

/** JSON requests through a counting proxy, which adds the credentials. */
export class Rest {
  constructor(readonly base: string) {}

  async send<T = Record<string, unknown>>(
    method: string,
    path: string,
    body?: unknown,
    contentType = 'application/json',
  ): Promise<T> {
    const res = await fetch(`${this.base}${path}`, {
      method,
      ...(body === undefined ? {} : { headers: { 'content-type': contentType }, body: JSON.stringify(body) }),
    });
    const text = await res.text();
    if (!res.ok) throw new Error(`${method} ${path}: ${res.status} ${text.slice(0, 300)}`);
    return (text ? JSON.parse(text) : {}) as T;
  }

  /** A status merge patch (the kubelet's and the controllers' write). */
  status(path: string, status: unknown): Promise<unknown> {
    return this.send('PATCH', `${path}/status`, { status }, 'application/merge-patch+json');
  }
}

/** A real cluster's kube-apiserver and etcd processes on this machine. */
export interface ServerPids {
  apiserver: number;
  etcd: number | undefined;
}

/** A cluster the watch runs on, as the bench reaches, seeds and changes it. */
export interface Target {
  kind: 'sim' | 'real';
  label: string;
  namespace: string;
  /** The bench's own requests (seeding on a real server, the changes, the bare watch and list). */
  admin: CountingProxy;
  rest: Rest;
  /** Where the workers' proxies forward to, and how. */
  upstream: { kc: KubeConfig; plainUrl: string | undefined };
  seed(items: Seeded[]): Promise<void>;
  /** kube-apiserver and etcd, for their CPU; undefined on the simulated cluster (it is this process). */
  serverPids: ServerPids | undefined;
  close(): Promise<void>;
}

export async function simTarget(namespace: string): Promise<Target> {
  const sim = await startSim(namespace, 15);
  const kc = new KubeConfig();
  kc.loadFromString(sim.kubeconfig());
  const admin = await startCountingProxy(kc, sim.httpUrl);
  return {
    kind: 'sim',
    label: 'simulated',
    namespace,
    admin,
    rest: new Rest(admin.url),
    upstream: { kc, plainUrl: sim.httpUrl },
    seed: async (items) => {
      const startedAt = seconds(new Date());
      for (const [i, s] of items.entries()) {
        storeLrp(sim, s.lrp, s.generation, [s.pod, ...s.others], namespace, startedAt);
        if (i % 500 === 499) await new Promise((r) => setImmediate(r));
      }
    },
    serverPids: undefined,
    close: async () => {
      await admin.close();
      await sim.close();
    },
  };
}

function cmdline(pid: number): string[] {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0');
  } catch {
    return [];
  }
}

function pgrep(name: string): number[] {
  const r = spawnSync('pgrep', ['-x', name], { encoding: 'utf8' });
  return r.stdout
    .split('\n')
    .filter(Boolean)
    .map(Number)
    .filter((n) => Number.isInteger(n) && n > 0);
}

/** A flag's value in a command line, given as `--flag value` or `--flag=value`. */
function argOf(args: string[], flag: string): string | undefined {
  const i = args.indexOf(flag);
  if (i >= 0) return args[i + 1];
  return args.find((a) => a.startsWith(`${flag}=`))?.slice(flag.length + 1);
}

/**
 * The kube-apiserver serving `port` on this machine (by its `--secure-port`) and the etcd it names in
 * `--etcd-servers` (by its `--listen-client-urls`); undefined when not found (a remote server).
 */
function findServerPids(port: number): ServerPids | undefined {
  const apiservers = pgrep('kube-apiserver');
  const apiserver =
    apiservers.find((pid) => Number(argOf(cmdline(pid), '--secure-port') ?? 6443) === port) ??
    (apiservers.length === 1 ? apiservers[0] : undefined);
  if (apiserver === undefined) return undefined;
  const etcdUrl = argOf(cmdline(apiserver), '--etcd-servers')?.split(',')[0];
  const etcdPort = etcdUrl ? new URL(etcdUrl).port : undefined;
  const etcd = pgrep('etcd').find((pid) =>
    (argOf(cmdline(pid), '--listen-client-urls') ?? '').split(',').some((u) => u.endsWith(`:${etcdPort}`)),
  );
  return { apiserver, etcd };
}

export async function realTarget(file: string, namespace: string): Promise<Target> {
  const kc = new KubeConfig();
  kc.loadFromFile(file);
  const server = kc.getCurrentCluster()?.server;
  if (!server) throw new Error(`${file} names no current cluster`);
  const admin = await startCountingProxy(kc);
  const rest = new Rest(admin.url);
  await rest.send('POST', '/api/v1/namespaces', {
    apiVersion: 'v1',
    kind: 'Namespace',
    metadata: { name: namespace },
  });
  const ns = `/namespaces/${namespace}`;
  const url = new URL(server);
  return {
    kind: 'real',
    label: `real (${url.host})`,
    namespace,
    admin,
    rest,
    upstream: { kc, plainUrl: undefined },
    seed: async (items) => {
      const startedAt = seconds(new Date());
      let done = 0;
      await inLanes(items, 32, async (s) => {
        await rest.send('POST', `/apis/apps/v1${ns}/deployments`, deploymentAt(s.lrp, s.generation));
        for (const name of [s.pod, ...s.others]) {
          await rest.send('POST', `/api/v1${ns}/pods`, podBody(s.lrp, name, namespace));
          await rest.status(`/api/v1${ns}/pods/${name}`, runningStatus(s.lrp, startedAt));
        }
        if (++done % 1000 === 0) log(`  ${done} of ${items.length} seeded`);
      });
      // Controllers would add ReplicaSets and pods of their own to what the bench plays.
      const rs = await rest.send<{ items: unknown[] }>('GET', `/apis/apps/v1${ns}/replicasets?limit=1`);
      if (rs.items.length > 0) {
        throw new Error(
          'a controller-manager runs against this server: the bench plays the controllers itself; ' +
            'start the server with ./start.sh --api-only',
        );
      }
    },
    serverPids: findServerPids(Number(url.port || 443)),
    close: async () => {
      // Pods at once (no kubelet would finish a graceful deletion); what the service made too.
      const collections = [
        `/apis/apps/v1${ns}/deployments`,
        `/api/v1${ns}/pods?gracePeriodSeconds=0`,
        `/apis/batch/v1${ns}/jobs?propagationPolicy=Background`,
        `/apis/coordination.k8s.io/v1${ns}/leases`,
        `/api/v1${ns}/secrets`,
        `/api/v1${ns}/events`,
      ];
      for (const c of collections) {
        await rest.send('DELETE', c).catch((err: unknown) => {
          log(`cleanup: ${err instanceof Error ? err.message : String(err)}`);
        });
      }
      await rest.send('DELETE', `/api/v1/namespaces/${namespace}`).catch(() => undefined);
      await admin.close();
    },
  };
}

/** kube-apiserver's and etcd's CPU seconds so far. */
export function serverCpu(p: ServerPids): number {
  return cpuSeconds(p.apiserver) + (p.etcd !== undefined ? cpuSeconds(p.etcd) : 0);
}

/** Their CPU over `seconds` of wall time, in % of one core. */
export async function serverCpuOver(p: ServerPids, seconds: number): Promise<number> {
  const c0 = serverCpu(p);
  const t0 = performance.now();
  await sleep(seconds * 1000);
  return ((serverCpu(p) - c0) / ((performance.now() - t0) / 1000)) * 100;
}
