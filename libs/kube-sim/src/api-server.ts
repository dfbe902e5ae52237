/**
 * The simulated kube-apiserver's HTTP face, wiring its parts: the transport (plain HTTP and HTTPS on one
 * port, bearer tokens), health checks, the `/sim/*` admin endpoints, discovery, routing, fault injection,
 * the verbs and their subresources, and watch streams. Plain `node:http`, so streaming and flushing are
 * under our control.
 */
import type http from 'node:http';
import { serveAdmin } from './admin.js';
import { DiscoveryEndpoints } from './discovery-endpoints.js';
import { errors } from './errors.js';
import { injectFault } from './fault-injection.js';
import type { Faults } from './faults.js';
import { type Res, send, sendError } from './http-io.js';
import { NO_SUCH_PATH, route, verbOf } from './routing.js';
import type { Store } from './store.js';
import type { LogWrite, PodLogRead } from './controllers/container-logs.js';
import type { LogRequest } from './subresources.js';
import { Transport, authorized } from './transport.js';
import { Verbs } from './verbs.js';
import { WatchStreams } from './watch.js';

export type { LogRequest } from './subresources.js';
export { bindPod, scaleOf } from './subresources.js';

export interface ApiServerOptions {
  store: Store;
  faults: Faults;
  /** Bearer tokens accepted; any other (or none) gets 401. */
  tokens: ReadonlySet<string>;
  /** Pod logs, from the simulated kubelet. */
  logs?: (req: LogRequest) => PodLogRead;
  /** Lines a test asks a running container to write (`POST /sim/pods/<ns>/<name>/log`). */
  writeLog?: (req: LogWrite) => number;
  /** Seconds after which a watch without timeoutSeconds is closed (randomised up to 2×), as upstream. */
  watchTimeoutSeconds?: number;
  bookmarkIntervalMs?: number;
  maxBodyBytes?: number;
  random?: () => number;
}

export class ApiServer {
  readonly server: http.Server;
  /** Connections accepted since start, for tests of connection reuse. */
  readonly connectionsAccepted: { tls: number; plain: number };
  private readonly transport: Transport;
  private readonly watches: WatchStreams;
  private readonly discovery: DiscoveryEndpoints;
  private readonly verbs: Verbs;

  constructor(private readonly options: ApiServerOptions) {
    this.watches = new WatchStreams(options.store, options.faults, options);
    this.discovery = new DiscoveryEndpoints(options.store);
    this.verbs = new Verbs(options.store, this.watches, options);
    this.transport = new Transport((req, res) => this.handle(req, res));
    this.server = this.transport.server;
    this.connectionsAccepted = this.transport.connectionsAccepted;
  }

  /** Listens on one port for both plain HTTP and HTTPS; resolves to the port. */
  listen(port: number, host = '127.0.0.1'): Promise<number> {
    return this.transport.listen(port, host);
  }

  get openWatches(): number {
    return this.watches.size;
  }

  async close(): Promise<void> {
    this.watches.endAll();
    await this.transport.close();
  }

  private async handle(req: http.IncomingMessage, res: Res): Promise<void> {
    const { store, faults } = this.options;
    const url = new URL(req.url ?? '/', 'http://sim');
    const path = url.pathname.replace(/\/+$/, '') || '/';
    const method = req.method ?? 'GET';
    if (path === '/healthz' || path === '/livez' || path === '/readyz') {
      res.writeHead(200, { 'Content-Type': 'text/plain' });
      res.end('ok');
      return;
    }
    if (!authorized(req, this.options.tokens)) {
      sendError(res, errors.unauthorized());
      return;
    }
    if (path.startsWith('/sim/') || path === '/sim') {
      const sim = {
        store,
        faults,
        watches: this.watches,
        maxBodyBytes: this.options.maxBodyBytes,
        writeLog: this.options.writeLog,
      };
      await serveAdmin(sim, req, res, path, method);
      return;
    }
    if (method === 'GET' && this.discovery.serve(req, res, path)) return;
    const r = route(store.registry, path);
    if (!r) {
      send(res, 404, NO_SUCH_PATH);
      return;
    }
    const q = url.searchParams;
    const verb = verbOf(method, r, q);
    if (await injectFault(faults, req, res, r, verb)) return;
    await this.verbs.serve(req, res, r, q, verb);
  }
}
