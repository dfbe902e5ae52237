/**
 * The worker's own small HTTP server (OPI_METRICS_PORT on HOST): /metrics for Prometheus, /healthz (the
 * BullMQ workers run) and /readyz (Redis answers a PING, Kubernetes a cheap read, the cluster's watches
 * are listed and running: cache/watch-health.ts; routing's NATS connection is shown, not required). node:http
 * rather than Express: three fixed GET routes, and nothing else in the worker speaks HTTP.
 */
import { type IncomingMessage, type Server, type ServerResponse, createServer } from 'node:http';
import type { KubernetesPort } from '@opi/kube';
import type { Logger } from '@opi/logging';
import { type CheckResult, type OpiMetrics, type Pingable, pingRedis, runChecks } from '@opi/metrics';
import { closeServer, listen } from '@opi/runtime';

export const READY_REDIS_TIMEOUT_MS = 1000;
export const READY_KUBE_TIMEOUT_MS = 2000;

export interface MetricsServerDeps {
  metrics: OpiMetrics;
  /** Liveness: whether the BullMQ workers are running. */
  running(): boolean;
  redis: Pingable;
  kube: Pick<KubernetesPort, 'getNamespace'>;
  /** Read by the readiness check: one small GET that needs a reachable, authorised apiserver. */
  namespace: string;
  /** The watches' health (cache/watch-health.ts): resolves when every kind is listed and watched. */
  watches?: () => Promise<string>;
  /** Routing's state (OPI_ROUTING=nats): shown, but a degraded routing does not make the worker unready. */
  routing?: () => CheckResult;
  logger: Logger;
}

export interface RunningMetricsServer {
  server: Server;
  port: number;
  close(): Promise<void>;
}

function send(res: ServerResponse, status: number, contentType: string, body: string): void {
  res.writeHead(status, { 'Content-Type': contentType, 'Cache-Control': 'no-store' });
  res.end(body);
}

function json(res: ServerResponse, status: number, body: unknown): void {
  send(res, status, 'application/json; charset=utf-8', JSON.stringify(body));
}

export function metricsHandler(deps: MetricsServerDeps): (req: IncomingMessage, res: ServerResponse) => void {
  let ready: boolean | undefined;
  const readyz = async (res: ServerResponse): Promise<void> => {
    const report = await runChecks({
      redis: { run: () => pingRedis(deps.redis), timeoutMs: READY_REDIS_TIMEOUT_MS },
      kubernetes: {
        run: async () => {
          if (await deps.kube.getNamespace(deps.namespace)) return 'ok';
          throw new Error(`reachable, but namespace ${deps.namespace} does not exist (OPI_NAMESPACE)`);
        },
        timeoutMs: READY_KUBE_TIMEOUT_MS,
      },
      ...(deps.watches ? { watches: { run: deps.watches, timeoutMs: READY_REDIS_TIMEOUT_MS } } : {}),
    });
    if (deps.routing) report.checks['routing'] = deps.routing();
    const now = report.status === 'ok';
    // Probes are not logged, so say when the answer changes.
    if (now !== ready) {
      if (now) deps.logger.info('worker ready');
      else deps.logger.warn({ checks: report.checks }, 'worker not ready');
      ready = now;
    }
    json(res, now ? 200 : 503, report);
  };

  const route = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const path = (req.url ?? '/').split('?')[0] ?? '/';
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      res.setHeader('Allow', 'GET, HEAD');
      json(res, 405, { error: { message: `${req.method ?? ''} is not allowed` } });
      return;
    }
    switch (path) {
      case '/metrics': {
        const { contentType, body } = await deps.metrics.expose();
        send(res, 200, contentType, body);
        return;
      }
      case '/healthz':
        if (deps.running()) send(res, 200, 'text/plain; charset=utf-8', 'ok');
        else send(res, 503, 'text/plain; charset=utf-8', 'workers are not running');
        return;
      case '/readyz':
        await readyz(res);
        return;
      default:
        json(res, 404, { error: { message: `no route for ${req.method} ${path}` } });
    }
  };

  return (req, res) => {
    route(req, res).catch((err: unknown) => {
      deps.logger.error({ err }, 'metrics server request failed');
      if (!res.headersSent) json(res, 500, { error: { message: 'internal error' } });
      else res.destroy();
    });
  };
}

export async function startMetricsServer(
  deps: MetricsServerDeps,
  port: number,
  host: string,
): Promise<RunningMetricsServer> {
  const server = createServer(metricsHandler(deps));
  // Scrapers and probes reconnect at will; an idle keep-alive socket must not hold up shutdown.
  server.keepAliveTimeout = 5000;
  const bound = await listen(server, port, host);
  deps.logger.info({ host, port: bound }, 'worker metrics and health listening');
  return {
    server,
    port: bound,
    close: () => closeServer(server, 'all'),
  };
}
