import http from 'node:http';
import type net from 'node:net';
import { afterEach, describe, expect, it } from '@jest/globals';
import type { BehaviourConfig } from '../behaviour.js';
import type { KubeObject } from '../types.js';
import type { PodAnswer } from './pod-http.js';
import type { Container } from './pods.js';
import {
  type Harness,
  container,
  env,
  eventually,
  isPodReady,
  startHarness,
  status,
} from './test-harness.js';

let h: Harness | undefined;
const foreign: net.Server[] = [];
afterEach(async () => {
  await h?.stop();
  h = undefined;
  await Promise.all(
    foreign.splice(0).map(
      (s) =>
        new Promise<void>((resolve) => {
          s.close(() => {
            resolve();
          });
        }),
    ),
  );
});

async function harness(behaviour: Partial<BehaviourConfig> = {}, servePods = true): Promise<Harness> {
  h = await startHarness(behaviour, { servePods });
  return h;
}

function current(): Harness {
  if (!h) throw new Error('no harness');
  return h;
}

function createPod(name: string, containers: Container[], spec: Record<string, unknown> = {}): KubeObject {
  return current().create('', 'pods', {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name },
    spec: { containers, ...spec },
  });
}

const pod = (name: string) => current().get('', 'pods', name);
const ports = (...p: number[]) => p.map((containerPort) => ({ containerPort, protocol: 'TCP' }));

/** Whether ip is in 127.0.0.0/8: every address a test dials is checked first. */
function isLoopback(ip: string): boolean {
  const parts = ip.split('.').map(Number);
  return (
    parts.length === 4 && parts[0] === 127 && parts.every((p) => Number.isInteger(p) && p >= 0 && p <= 255)
  );
}

interface Answer {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: string;
}

/** One request on a fresh connection; 'refused' when nothing listens there. */
function dial(ip: string, port: number, path = '/', host?: string): Promise<Answer | 'refused'> {
  expect(isLoopback(ip)).toBe(true);
  return new Promise((resolve, reject) => {
    const req = http.request(
      { host: ip, port, path, agent: false, headers: host !== undefined ? { host } : {} },
      (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => (body += chunk));
        res.on('end', () => {
          resolve({ status: res.statusCode ?? 0, headers: res.headers, body });
        });
        res.on('error', reject);
      },
    );
    req.on('error', (err: NodeJS.ErrnoException) => {
      // A listener closed mid-request (the container stopping) counts as nothing listening.
      if (err.code === 'ECONNREFUSED' || err.code === 'ECONNRESET') resolve('refused');
      else reject(err);
    });
    req.end();
  });
}

async function answers(ip: string, port: number): Promise<boolean> {
  return (await dial(ip, port)) !== 'refused';
}

function podIP(name: string): string {
  const ip = status(pod(name)).podIP;
  if (!ip) throw new Error(`${name} has no IP`);
  expect(isLoopback(ip)).toBe(true);
  return ip;
}

/** Polls an async check until it holds; a check that throws fails the test. */
async function until(check: () => Promise<boolean>, what: string, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

const running = (name: string) => {
  const p = pod(name);
  return p !== undefined && status(p).phase === 'Running' && !!status(p).podIP;
};

describe('pods answer HTTP', () => {
  it('a Running pod answers at each declared container port with its JSON and header', async () => {
    await harness();
    const made = createPod('web', [
      container({ name: 'app', ports: ports(8080) }),
      container({
        name: 'side',
        image: 'envoy:1',
        ports: [...ports(9090, 9091), { containerPort: 5353, protocol: 'UDP' }],
      }),
    ]);
    await eventually(() => running('web') && isPodReady(pod('web')!), 'web ready');
    const ip = podIP('web');
    expect(ip.startsWith(`127.${current().podRange.octet}.`)).toBe(true);
    for (const port of [8080, 9090, 9091]) {
      await until(() => answers(ip, port), `port ${port} answering`);
      const a = await dial(ip, port, '/some/path?x=1&y=%20z', 'myapp.apps.example.com');
      if (a === 'refused') throw new Error(`port ${port} refused`);
      expect(a.status).toBe(200);
      expect(a.headers['content-type']).toBe('application/json');
      expect(a.headers['x-kubesim-pod']).toBe('web');
      expect(JSON.parse(a.body) as PodAnswer).toEqual({
        pod: 'web',
        namespace: 'test',
        uid: made.metadata.uid,
        port,
        host: 'myapp.apps.example.com',
        path: '/some/path?x=1&y=%20z',
      });
    }
    // Any method, any path.
    const post = await new Promise<number>((resolve, reject) => {
      const req = http.request({ host: ip, port: 8080, method: 'POST', path: '/x', agent: false }, (res) => {
        res.resume();
        resolve(res.statusCode ?? 0);
      });
      req.on('error', reject);
      req.end('{"a":1}');
    });
    expect(post).toBe(200);
    // Only declared TCP ports listen.
    expect(await dial(ip, 8081)).toBe('refused');
  });

  it('a crashed container stops answering until it runs again', async () => {
    // A long back-off keeps the crashed container down while the test looks.
    await harness({ backoffBaseMs: 60_000, backoffMaxMs: 60_000 });
    createPod('crasher', [
      container({ ports: ports(8080), env: env({ KUBESIM_BEHAVIOUR: 'crash', KUBESIM_RUN_MS: '1500' }) }),
    ]);
    await eventually(() => running('crasher'), 'crasher running');
    const ip = podIP('crasher');
    await until(() => answers(ip, 8080), 'crasher answering while running');
    await eventually(
      () => status(pod('crasher')).containerStatuses?.[0]?.state.waiting?.reason === 'CrashLoopBackOff',
      'crasher in CrashLoopBackOff',
    );
    expect(await dial(ip, 8080)).toBe('refused');
  });

  it('a restarted container answers again', async () => {
    await harness();
    createPod('again', [
      container({ ports: ports(8080), env: env({ KUBESIM_BEHAVIOUR: 'crash', KUBESIM_RUN_MS: '1500' }) }),
    ]);
    await eventually(() => running('again'), 'running');
    const ip = podIP('again');
    await until(async () => {
      const cs = status(pod('again')).containerStatuses?.[0];
      const restarted = (cs?.restartCount ?? 0) >= 1 && cs?.state.running !== undefined;
      return restarted && (await answers(ip, 8080));
    }, 'answering after a restart');
  });

  it('a container that exited (a finished Job pod) answers no more', async () => {
    await harness();
    createPod('job', [container({ ports: ports(8080), env: env({ KUBESIM_RUN_MS: '1500' }) })], {
      restartPolicy: 'Never',
    });
    await eventually(() => running('job'), 'running');
    const ip = podIP('job');
    await until(() => answers(ip, 8080), 'answering while running');
    await eventually(() => status(pod('job')).phase === 'Succeeded', 'succeeded');
    expect(await dial(ip, 8080)).toBe('refused');
  });

  it('a container that never gets healthy listens on nothing, as its probe failures say', async () => {
    await harness();
    const probe = { tcpSocket: { port: 8080 } };
    createPod('sick', [
      container({
        ports: ports(8080),
        startupProbe: probe,
        env: env({ KUBESIM_BEHAVIOUR: 'never-healthy' }),
      }),
    ]);
    await eventually(
      () =>
        current()
          .events('sick')
          .some((e) => e['reason'] === 'Unhealthy'),
      'Unhealthy event',
    );
    expect(await dial(podIP('sick'), 8080)).toBe('refused');
  });

  it('with serving switched off, a Running pod has an IP and nothing listens', async () => {
    await harness({}, false);
    createPod('quiet', [container({ ports: ports(8080) })]);
    await eventually(() => running('quiet') && isPodReady(pod('quiet')!), 'ready');
    expect(await dial(podIP('quiet'), 8080)).toBe('refused');
  });

  it('closes every listener when the simulator stops', async () => {
    const harnessed = await harness();
    createPod('web', [container({ ports: ports(8080) })]);
    await eventually(() => running('web'), 'running');
    const ip = podIP('web');
    await until(() => answers(ip, 8080), 'answering');
    await harnessed.stop();
    expect(await dial(ip, 8080)).toBe('refused');
  });
});

describe('a deleted pod drains', () => {
  it('keeps answering for its drain time, while the pod object is there, and until a forced delete', async () => {
    // A drain longer than the grace period: it ends with the grace period (30 s), after this test.
    await harness({ drainMs: 600_000 });
    createPod('web', [container({ ports: ports(8080) })]);
    await eventually(() => running('web'), 'running');
    const ip = podIP('web');
    await until(() => answers(ip, 8080), 'answering');
    const h0 = current();
    h0.store.delete(h0.type('', 'pods'), 'test', 'web');
    expect(pod('web')?.metadata.deletionTimestamp).toBeDefined();
    await eventually(
      () => h0.events('web').some((e) => e['reason'] === 'Killing'),
      'the kubelet stopping the container',
    );
    for (let i = 0; i < 5; i++) {
      const a = await dial(ip, 8080);
      if (a === 'refused') throw new Error('refused while draining');
      expect(a.headers['x-kubesim-pod']).toBe('web');
      expect(pod('web')?.metadata.deletionTimestamp).toBeDefined();
    }
    // Forced (grace 0): the pod is gone at once, and so are its ports.
    h0.store.delete(h0.type('', 'pods'), 'test', 'web', { gracePeriodSeconds: 0 });
    await eventually(() => !pod('web'), 'pod removed');
    await until(async () => !(await answers(ip, 8080)), 'refusing');
  });

  it('stops answering once its drain is over, cut to its grace period, and is then removed', async () => {
    await harness();
    // The container would drain for 10 minutes; the pod's grace period cuts it to 1 s.
    createPod('web', [container({ ports: ports(8080), env: env({ KUBESIM_DRAIN_MS: '600000' }) })], {
      terminationGracePeriodSeconds: 1,
    });
    await eventually(() => running('web'), 'running');
    const ip = podIP('web');
    await until(() => answers(ip, 8080), 'answering');
    const h0 = current();
    h0.store.delete(h0.type('', 'pods'), 'test', 'web');
    // The port stops answering before the pod is removed: once the pod is gone, a dial is refused. (Read
    // before the dial: a pod read after an answer may have been removed meanwhile.)
    await until(async () => {
      const held = pod('web');
      if (held) expect(held.metadata.deletionTimestamp).toBeDefined();
      const answered = await answers(ip, 8080);
      if (!held) expect(answered).toBe(false);
      return !answered;
    }, 'refusing after the drain');
    await eventually(() => !pod('web'), 'pod removed');
    expect(await dial(ip, 8080)).toBe('refused');
  });
});

describe('a port that cannot be bound', () => {
  it('gets a Warning Event naming the address and the error, is not retried, and never answers for the one holding it', async () => {
    const harnessed = await harness();
    // Someone else holds port 8080 on the first address of every node's podCIDR: a new pod gets one of them.
    const nodes = harnessed.store.all(harnessed.type('', 'nodes'));
    const firsts = nodes.map((n) => {
      const base = (n['spec'] as { podCIDR: string }).podCIDR.split('/')[0] ?? '';
      return base.replace(/\.0$/, '.1');
    });
    expect(firsts).toHaveLength(3);
    for (const ip of firsts) {
      expect(isLoopback(ip)).toBe(true);
      const s = http.createServer((_req, res) => {
        res.writeHead(200, { 'Content-Type': 'text/plain' });
        res.end('foreign');
      });
      await new Promise<void>((resolve, reject) => {
        s.once('error', reject);
        s.listen({ host: ip, port: 8080 }, resolve);
      });
      foreign.push(s);
    }
    createPod('blocked', [container({ ports: ports(8080, 8081) })]);
    await eventually(() => running('blocked') && isPodReady(pod('blocked')!), 'ready');
    const ip = podIP('blocked');
    expect(firsts).toContain(ip);
    const warning = await eventually(
      () => harnessed.events('blocked').find((e) => e['reason'] === 'PortBindFailed'),
      'PortBindFailed event',
    );
    expect(warning['type']).toBe('Warning');
    expect(String(warning['message'])).toContain(`${ip}:8080`);
    expect(String(warning['message'])).toContain('EADDRINUSE');
    expect(warning['involvedObject']).toMatchObject({
      kind: 'Pod',
      name: 'blocked',
      fieldPath: 'spec.containers{app}',
    });
    // The other port serves; the held one answers only for its holder.
    await until(() => answers(ip, 8081), 'port 8081 answering');
    const held = await dial(ip, 8080);
    if (held === 'refused') throw new Error('the holder stopped answering');
    expect(held.body).toBe('foreign');
    expect(held.headers['x-kubesim-pod']).toBeUndefined();
    // Later status changes (ready, each sync) did not try again: one attempt, one Event.
    const bindEvents = harnessed.events('blocked').filter((e) => e['reason'] === 'PortBindFailed');
    expect(bindEvents).toHaveLength(1);
    expect(bindEvents[0]?.['count'] ?? 1).toBe(1);
  });
});
