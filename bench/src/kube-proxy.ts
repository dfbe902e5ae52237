/**
 * A counting proxy between the service and a Kubernetes API server (simulated or real): plain HTTP on
 * loopback towards the service, the kubeconfig's credentials towards the server. Every request is
 * classified by verb and resource as the API server's own metrics do (a LIST is a GET of a collection
 * without `watch=true`, a WATCH is one with it; the further pages of a paged list are counted apart), so
 * what the service asks of the cluster is counted the same way on both. Streams (watches) are piped
 * through as they come; nothing is buffered.
 */
import {
  Agent as HttpAgent,
  type IncomingMessage,
  type ServerResponse,
  createServer,
  request as httpRequest,
} from 'node:http';
import { Agent as HttpsAgent, type RequestOptions, request as httpsRequest } from 'node:https';
import type { AddressInfo, Socket } from 'node:net';
import type { KubeConfig } from '@kubernetes/client-node';

/** Headers of one connection, not of the message: each side sets its own. */
const HOP_BY_HOP = new Set(['connection', 'keep-alive', 'transfer-encoding', 'upgrade', 'proxy-connection']);

export type Verb =
  'LIST' | 'LIST_PAGE' | 'WATCH' | 'GET' | 'CREATE' | 'UPDATE' | 'PATCH' | 'DELETE' | 'OTHER';

export interface Classified {
  verb: Verb;
  /** Plural resource name (`pods`, `deployments`, `leases`, …), with a subresource as `pods/status`. */
  resource: string;
}

/** Verb and resource of a Kubernetes API request, from its method and URL. */
export function classify(method: string, url: string): Classified {
  const u = new URL(url, 'http://proxy');
  const segs = u.pathname.split('/').filter(Boolean);
  let rest: string[];
  if (segs[0] === 'api' && segs.length >= 2) rest = segs.slice(2);
  else if (segs[0] === 'apis' && segs.length >= 3) rest = segs.slice(3);
  else return { verb: 'OTHER', resource: u.pathname };
  // `namespaces/<ns>/<resource>…` is namespaced; `namespaces` or `namespaces/<ns>` is the Namespace kind.
  if (rest[0] === 'namespaces' && rest.length >= 3) rest = rest.slice(2);
  const [resource = '', name, sub] = rest;
  const kind = sub ? `${resource}/${sub}` : resource;
  const collection = name === undefined;
  switch (method) {
    case 'GET':
      if (!collection) return { verb: 'GET', resource: kind };
      if (u.searchParams.get('watch') === 'true' || u.searchParams.get('watch') === '1') {
        return { verb: 'WATCH', resource: kind };
      }
      return { verb: u.searchParams.has('continue') ? 'LIST_PAGE' : 'LIST', resource: kind };
    case 'POST':
      return { verb: 'CREATE', resource: kind };
    case 'PUT':
      return { verb: 'UPDATE', resource: kind };
    case 'PATCH':
      return { verb: 'PATCH', resource: kind };
    case 'DELETE':
      return { verb: 'DELETE', resource: kind };
    default:
      return { verb: 'OTHER', resource: kind };
  }
}

export interface Tally {
  requests: number;
  /** Response bytes (body), as far as they have come. */
  bytes: number;
}

/** Counts by `VERB resource`. */
export type Counts = Map<string, Tally>;

export interface CountingProxy {
  /** `http://127.0.0.1:<port>`. */
  readonly url: string;
  /** A copy of the counts so far. */
  counts(): Counts;
  /** A kubeconfig for the service: this proxy as its server, no credentials of its own. */
  kubeconfig(namespace: string): string;
  close(): Promise<void>;
}

/** What `after` counted beyond `before`. */
export function countsBetween(before: Counts, after: Counts): Counts {
  const out: Counts = new Map();
  for (const [k, v] of after) {
    const b = before.get(k) ?? { requests: 0, bytes: 0 };
    if (v.requests - b.requests || v.bytes - b.bytes) {
      out.set(k, { requests: v.requests - b.requests, bytes: v.bytes - b.bytes });
    }
  }
  return out;
}

/** The counts of several proxies added up. */
export function sumCounts(all: Counts[]): Counts {
  const out: Counts = new Map();
  for (const c of all) {
    for (const [k, v] of c) {
      const t = out.get(k) ?? { requests: 0, bytes: 0 };
      out.set(k, { requests: t.requests + v.requests, bytes: t.bytes + v.bytes });
    }
  }
  return out;
}

/** Requests by `VERB resource` (a watch that only streamed in the window made no request there). */
export const countsRecord = (c: Counts): Record<string, number> =>
  Object.fromEntries([...c].filter(([, v]) => v.requests > 0).map(([k, v]) => [k, v.requests]));

/** Requests of `verb` on `resource` in `counts`. */
export function requestsOf(counts: Counts, verb: Verb, resource: string): number {
  return counts.get(`${verb} ${resource}`)?.requests ?? 0;
}

/** `LIST pods: 3 (1.2 MB), WATCH pods: 1, …`, largest first. */
export function describeCounts(counts: Counts): string {
  return [...counts]
    .filter(([, v]) => v.requests > 0)
    .sort((a, b) => b[1].requests - a[1].requests)
    .map(([k, v]) => `${k}: ${v.requests}${v.bytes >= 1e6 ? ` (${(v.bytes / 1e6).toFixed(1)} MB)` : ''}`)
    .join(', ');
}

/**
 * Forwards to the kubeconfig's current cluster with its credentials (token or client certificate and
 * its CA), or to `plainUrl` over plain HTTP when given (the simulated cluster also speaks plain HTTP on
 * its port and accepts its token there: no TLS work in the bench's own process).
 */
export async function startCountingProxy(kc: KubeConfig, plainUrl?: string): Promise<CountingProxy> {
  const cluster = kc.getCurrentCluster();
  if (!cluster) throw new Error('the kubeconfig names no current cluster');
  const upstream = new URL(plainUrl ?? cluster.server);
  const tls = upstream.protocol === 'https:';
  const options: RequestOptions = {};
  await kc.applyToHTTPSOptions(options);
  const authHeaders: Record<string, string> = {};
  for (const [k, v] of Object.entries(options.headers ?? {})) {
    if (typeof v === 'string') authHeaders[k.toLowerCase()] = v;
  }
  const agent = tls
    ? new HttpsAgent({
        keepAlive: true,
        maxSockets: 256,
        ...(options.ca ? { ca: options.ca } : {}),
        ...(options.cert ? { cert: options.cert } : {}),
        ...(options.key ? { key: options.key } : {}),
        rejectUnauthorized: options.rejectUnauthorized ?? true,
      })
    : new HttpAgent({ keepAlive: true, maxSockets: 256 });
  const send = tls ? httpsRequest : httpRequest;

  const counts: Counts = new Map();
  const tally = (key: string): Tally => {
    let t = counts.get(key);
    if (!t) counts.set(key, (t = { requests: 0, bytes: 0 }));
    return t;
  };
  const sockets = new Set<Socket>();

  const handle = (req: IncomingMessage, res: ServerResponse): void => {
    const { verb, resource } = classify(req.method ?? 'GET', req.url ?? '/');
    const t = tally(`${verb} ${resource}`);
    t.requests++;
    const headers: Record<string, string | string[]> = {};
    for (const [k, v] of Object.entries(req.headers)) {
      if (v === undefined || k === 'host' || k === 'authorization' || HOP_BY_HOP.has(k)) continue;
      headers[k] = v;
    }
    Object.assign(headers, authHeaders, { host: upstream.host });
    const out = send(
      {
        protocol: upstream.protocol,
        hostname: upstream.hostname,
        port: upstream.port,
        method: req.method,
        path: req.url,
        headers,
        agent,
      },
      (answer) => {
        const back: Record<string, string | string[]> = {};
        for (const [k, v] of Object.entries(answer.headers)) {
          if (v !== undefined && !HOP_BY_HOP.has(k)) back[k] = v;
        }
        res.writeHead(answer.statusCode ?? 502, back);
        // A watch's events go out as they arrive.
        res.flushHeaders();
        answer.on('data', (chunk: Buffer) => {
          t.bytes += chunk.length;
        });
        answer.pipe(res);
        answer.on('error', () => res.destroy());
      },
    );
    out.on('error', (err) => {
      if (!res.headersSent) {
        res.writeHead(502, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ kind: 'Status', status: 'Failure', code: 502, message: err.message }));
      } else {
        res.destroy();
      }
    });
    // The service went away (a watch it stopped, a process that ended): so does the upstream request.
    res.on('close', () => {
      if (!res.writableFinished) out.destroy();
    });
    req.pipe(out);
  };

  const server = createServer({ noDelay: true, keepAliveTimeout: 60_000 }, handle);
  server.on('connection', (s: Socket) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  const url = `http://127.0.0.1:${port}`;
  return {
    url,
    counts: () => new Map([...counts].map(([k, v]) => [k, { ...v }])),
    kubeconfig: (namespace) =>
      [
        'apiVersion: v1',
        'kind: Config',
        'clusters:',
        '- name: bench-proxy',
        // Plain HTTP on loopback: client-node refuses http:// unless told TLS is not verified.
        `  cluster: {server: "${url}", insecure-skip-tls-verify: true}`,
        'users:',
        '- name: bench',
        // client-node wants a user; the proxy puts the real credentials on every request.
        '  user: {token: through-the-proxy}',
        'contexts:',
        '- name: bench-proxy',
        `  context: {cluster: bench-proxy, user: bench, namespace: ${namespace}}`,
        'current-context: bench-proxy',
        '',
      ].join('\n'),
    close: async () => {
      const closed = new Promise<void>((resolve) => {
        server.close(() => {
          resolve();
        });
      });
      for (const s of sockets) s.destroy();
      await closed;
      agent.destroy();
    },
  };
}
