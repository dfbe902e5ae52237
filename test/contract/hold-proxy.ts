/**
 * A plain-HTTP proxy in front of the test cluster, for cases that need to act between two requests of
 * one adapter call (e.g. change or compact the cluster between two pages of a list) or to drop
 * connections the way a network does. It authenticates upstream with the cluster's own kubeconfig, so
 * the adapter under test talks to it with a kubeconfig of its own (`kubeconfigYaml`).
 */
import { createServer, request as httpRequest, type IncomingHttpHeaders } from 'node:http';
import { request as httpsRequest } from 'node:https';
import type { AddressInfo, Socket } from 'node:net';
import type { KubeConfig } from '@kubernetes/client-node';

export interface Hold {
  /** Resolves with the URL of the first matching request, which then waits for `release`. */
  arrived: Promise<URL>;
  release(): void;
}

export interface HoldProxy {
  kubeconfigYaml: string;
  /** Holds the next request whose URL matches until `release` (one request; later ones pass). */
  hold(match: (url: URL) => boolean): Hold;
  /** Destroys every client connection at once, without an answer or a clean end; returns how many. */
  cutAll(): number;
  close(): Promise<void>;
}

/** Headers that belong to one hop, not to the request or answer. */
const HOP = new Set(['connection', 'keep-alive', 'host', 'authorization', 'transfer-encoding']);

function forwardable(headers: IncomingHttpHeaders): Record<string, string | string[]> {
  const out: Record<string, string | string[]> = {};
  for (const [k, v] of Object.entries(headers)) if (v !== undefined && !HOP.has(k)) out[k] = v;
  return out;
}

export async function startHoldProxy(kc: KubeConfig): Promise<HoldProxy> {
  const cluster = kc.getCurrentCluster();
  if (!cluster) throw new Error('no current cluster');
  const holds: { match: (url: URL) => boolean; arrive: (url: URL) => void; gate: Promise<void> }[] = [];
  const sockets = new Set<Socket>();

  const server = createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://proxy');
    const forward = async (): Promise<void> => {
      const i = holds.findIndex((h) => h.match(url));
      const held = holds[i];
      if (held) {
        holds.splice(i, 1);
        held.arrive(url);
        await held.gate;
      }
      const auth = await kc.applyToFetchOptions({});
      const headers = forwardable(req.headers);
      (auth.headers as unknown as { forEach(f: (v: string, k: string) => void): void }).forEach((v, k) => {
        headers[k] = v;
      });
      const target = new URL(`${cluster.server}${url.pathname}${url.search}`);
      const send = target.protocol === 'https:' ? httpsRequest : httpRequest;
      const up = send(target, {
        method: req.method ?? 'GET',
        headers,
        agent: auth.agent as never,
      });
      up.on('response', (answer) => {
        res.writeHead(answer.statusCode ?? 502, forwardable(answer.headers));
        answer.pipe(res);
      });
      up.on('error', () => res.destroy());
      res.on('close', () => up.destroy());
      req.pipe(up);
    };
    forward().catch(() => res.destroy());
  });
  server.on('connection', (s) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;

  return {
    kubeconfigYaml: [
      'apiVersion: v1',
      'kind: Config',
      'clusters:',
      '- name: proxy',
      `  cluster: { server: 'http://127.0.0.1:${port}', insecure-skip-tls-verify: true }`,
      'users:',
      '- name: proxy',
      '  user: { token: proxy }',
      'contexts:',
      '- name: proxy',
      '  context: { cluster: proxy, user: proxy }',
      'current-context: proxy',
    ].join('\n'),
    hold(match) {
      let release!: () => void;
      let arrive!: (url: URL) => void;
      const gate = new Promise<void>((resolve) => {
        release = resolve;
      });
      const arrived = new Promise<URL>((resolve) => {
        arrive = resolve;
      });
      holds.push({ match, arrive, gate });
      return { arrived, release };
    },
    cutAll() {
      const n = sockets.size;
      for (const s of sockets) s.destroy();
      return n;
    },
    close: async () => {
      for (const s of sockets) s.destroy();
      await new Promise<void>((resolve) =>
        server.close(() => {
          resolve();
        }),
      );
    },
  };
}
