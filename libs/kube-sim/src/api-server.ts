/**
 * The simulated kube-apiserver's HTTP face: the real URL layout, bearer-token authentication, `Status`
 * errors, lists with `limit`/`continue`, newline-delimited watch streams with resume and 410, subresources
 * (status, scale, log, eviction, binding), discovery, Table output for kubectl, fault injection and the
 * `/sim/*` admin endpoints. Plain `node:http`, so streaming and flushing are under our control.
 */
import http from 'node:http';
import net, { type AddressInfo } from 'node:net';
import tls from 'node:tls';
import { StatusError, errors } from './errors.js';
import { apiGroup, apiGroupList, apiResourceList, apiVersions, SERVER_VERSION } from './discovery.js';
import type { Faults, Verb } from './faults.js';
import {
  applyJsonPatch,
  applyMergePatch,
  applyStrategicMergePatch,
  parseApplyBody,
  patchTypeFromContentType,
} from './patch.js';
import { type ResourceType, apiVersionOf } from './resources.js';
import { labelSelectorToString, parseFieldSelector, parseLabelSelector } from './selectors.js';
import type { DeleteOptions, ListQuery, Store, StoreEvent } from './store.js';
import { toTable, wantsTable } from './table.js';
import { encodeOpenApiProtobuf, openApiDocument } from './openapi.js';
import { selfSignedCertificate } from './tls.js';
import { type Json, type KubeObject, type LabelSelector, isRecord } from './types.js';

export interface LogRequest {
  namespace: string;
  name: string;
  container?: string | undefined;
  previous: boolean;
  tailLines?: number | undefined;
}

export interface ApiServerOptions {
  store: Store;
  faults: Faults;
  /** Bearer tokens accepted; any other (or none) gets 401. */
  tokens: ReadonlySet<string>;
  /** Pod logs, from the simulated kubelet. */
  logs?: (req: LogRequest) => string;
  /** Seconds after which a watch without timeoutSeconds is closed (randomised up to 2×), as upstream. */
  watchTimeoutSeconds?: number;
  bookmarkIntervalMs?: number;
  maxBodyBytes?: number;
  random?: () => number;
}

interface Route {
  resource: ResourceType;
  namespace: string | undefined;
  name: string | undefined;
  sub: string | undefined;
}

type Res = http.ServerResponse;

const JSON_TYPE = 'application/json';

function send(res: Res, code: number, body: unknown, headers: Record<string, string> = {}): void {
  const text = JSON.stringify(body);
  res.writeHead(code, { 'Content-Type': JSON_TYPE, 'Content-Length': Buffer.byteLength(text), ...headers });
  res.end(text);
}

function sendError(res: Res, err: StatusError): void {
  const headers: Record<string, string> = {};
  const retry = err.details?.retryAfterSeconds;
  if (retry !== undefined) headers['Retry-After'] = String(retry);
  send(res, err.code, err.toStatus(), headers);
}

function intParam(q: URLSearchParams, name: string): number | undefined {
  const v = q.get(name);
  if (v === null || v === '') return undefined;
  const n = Number(v);
  if (!Number.isInteger(n)) throw errors.badRequest(`invalid value for ${name}: ${v}`);
  return n;
}

function boolParam(q: URLSearchParams, name: string): boolean {
  const v = q.get(name);
  return v === 'true' || v === '1';
}

function dryRun(q: URLSearchParams): boolean {
  const v = q.getAll('dryRun');
  if (v.some((x) => x !== 'All')) throw errors.badRequest(`Invalid dry run value: ${v.join(',')}`);
  return v.length > 0;
}

export class ApiServer {
  readonly server: http.Server;
  private listener: net.Server | undefined;
  private tls: tls.Server | undefined;
  private readonly sockets = new Set<net.Socket>();
  /** Connections accepted since start, for tests of connection reuse. */
  readonly connectionsAccepted = { tls: 0, plain: 0 };
  private readonly watches = new Set<Res>();
  private openApiPb: Buffer | undefined;
  private readonly store: Store;
  private readonly faults: Faults;

  constructor(private readonly options: ApiServerOptions) {
    this.store = options.store;
    this.faults = options.faults;
    this.server = http.createServer((req, res) => {
      this.handle(req, res).catch((err: unknown) => {
        if (res.headersSent) {
          res.destroy();
          return;
        }
        sendError(
          res,
          err instanceof StatusError
            ? err
            : errors.internal(err instanceof Error ? err.message : String(err)),
        );
      });
    });
    // Watches stay open for a long time; keep-alive sockets may idle.
    this.server.keepAliveTimeout = 60_000;
    this.server.requestTimeout = 0;
  }

  /**
   * One port speaks both plain HTTP and HTTPS (told apart by the first byte, 0x16 opens a TLS handshake):
   * client-go, hence kubectl, sends a bearer token only over https, while client-node and curl keep using
   * http://. The self-signed certificate is made on the first TLS connection.
   */
  async listen(port: number, host = '127.0.0.1'): Promise<number> {
    const listener = net.createServer((socket) => {
      this.sockets.add(socket);
      socket.once('close', () => this.sockets.delete(socket));
      // Until the HTTP or TLS server takes the socket over (with its own handler), a reset must not throw.
      const early = (): void => {
        socket.destroy();
      };
      socket.on('error', early);
      socket.once('data', (first: Buffer) => {
        socket.off('error', early);
        socket.pause();
        socket.unshift(first);
        if (first[0] === 0x16) {
          this.connectionsAccepted.tls++;
          this.tlsServer().emit('connection', socket);
        } else {
          this.connectionsAccepted.plain++;
          this.server.emit('connection', socket);
        }
        process.nextTick(() => socket.resume());
      });
    });
    this.listener = listener;
    await new Promise<void>((resolve, reject) => {
      listener.once('error', reject);
      listener.listen(port, host, () => {
        listener.off('error', reject);
        resolve();
      });
    });
    return (listener.address() as AddressInfo).port;
  }

  private tlsServer(): tls.Server {
    this.tls ??= tls
      .createServer(selfSignedCertificate(), (socket) => this.server.emit('connection', socket))
      .on('tlsClientError', (_err, socket) => socket.destroy());
    return this.tls;
  }

  get openWatches(): number {
    return this.watches.size;
  }

  async close(): Promise<void> {
    for (const w of this.watches) w.end();
    this.watches.clear();
    for (const s of this.sockets) s.destroy();
    this.sockets.clear();
    const listener = this.listener;
    if (listener) {
      await new Promise<void>((resolve) => {
        listener.close(() => {
          resolve();
        });
      });
    }
  }

  private async readBody(req: http.IncomingMessage): Promise<string> {
    const max = this.options.maxBodyBytes ?? 3 * 1024 * 1024;
    const chunks: Buffer[] = [];
    let size = 0;
    for await (const chunk of req) {
      const b = chunk as Buffer;
      size += b.length;
      if (size > max)
        throw new StatusError(
          413,
          'RequestEntityTooLarge',
          'the server has received too large a request entity',
        );
      chunks.push(b);
    }
    return Buffer.concat(chunks).toString('utf8');
  }

  private async readJson(req: http.IncomingMessage): Promise<unknown> {
    const text = await this.readBody(req);
    if (!text.trim()) return undefined;
    try {
      return JSON.parse(text) as unknown;
    } catch (e) {
      throw errors.badRequest(
        `the object provided is unrecognized: ${e instanceof Error ? e.message : String(e)}`,
      );
    }
  }

  private authorized(req: http.IncomingMessage): boolean {
    const h = req.headers.authorization;
    if (!h?.startsWith('Bearer ')) return false;
    return this.options.tokens.has(h.slice(7).trim());
  }

  private async handle(req: http.IncomingMessage, res: Res): Promise<void> {
    const url = new URL(req.url ?? '/', 'http://sim');
    const path = url.pathname.replace(/\/+$/, '') || '/';
    const method = req.method ?? 'GET';
    if (path === '/healthz' || path === '/livez' || path === '/readyz') {
      res.writeHead(200, { 'Content-Type': 'text/plain' });
      res.end('ok');
      return;
    }
    if (!this.authorized(req)) {
      sendError(res, errors.unauthorized());
      return;
    }
    if (path.startsWith('/sim/') || path === '/sim') {
      await this.handleAdmin(req, res, path, method);
      return;
    }
    if (method === 'GET' && this.handleDiscovery(req, res, path)) return;
    const route = this.route(path);
    if (!route) {
      send(res, 404, {
        kind: 'Status',
        apiVersion: 'v1',
        metadata: {},
        status: 'Failure',
        message: 'the server could not find the requested resource',
        reason: 'NotFound',
        details: {},
        code: 404,
      });
      return;
    }
    const q = url.searchParams;
    const verb = this.verbOf(method, route, q);
    const decision = this.faults.decide(verb, route.resource.plural);
    if (decision.delayMs > 0) await new Promise((r) => setTimeout(r, decision.delayMs));
    switch (decision.kind) {
      case 'drop':
        req.socket.destroy();
        return;
      case 'error': {
        const retryAfter = this.faults.current.retryAfterSeconds;
        const err =
          decision.code === 429
            ? errors.tooManyRequests(retryAfter)
            : decision.code === 503
              ? new StatusError(
                  503,
                  'ServiceUnavailable',
                  'the server is currently unable to handle the request',
                  {
                    retryAfterSeconds: retryAfter,
                  },
                )
              : new StatusError(
                  decision.code,
                  reasonOf(decision.code),
                  `injected fault: ${reasonOf(decision.code)}`,
                );
        sendError(res, err);
        return;
      }
      case 'conflict':
        sendError(res, errors.conflict(route.resource.plural, route.resource.group, route.name ?? ''));
        return;
      case 'none':
        break;
    }
    await this.handleResource(req, res, route, q, verb);
  }

  private verbOf(method: string, r: Route, q: URLSearchParams): Verb {
    switch (method) {
      case 'GET':
        if (r.name && r.sub !== undefined) return 'get';
        if (!r.name) return boolParam(q, 'watch') ? 'watch' : 'list';
        return 'get';
      case 'POST':
        return 'create';
      case 'PUT':
        return 'update';
      case 'PATCH':
        return 'patch';
      case 'DELETE':
        return r.name ? 'delete' : 'deletecollection';
      default:
        throw errors.methodNotAllowed(`${method} is not supported`);
    }
  }

  private handleDiscovery(req: http.IncomingMessage, res: Res, path: string): boolean {
    const reg = this.store.registry;
    let body: object | undefined;
    if (path === '/openapi/v2') {
      if (req.headers.accept?.includes('protobuf')) {
        this.openApiPb ??= encodeOpenApiProtobuf(this.openApi());
        // As a real server: the protobuf goes out as application/octet-stream.
        res.writeHead(200, {
          'Content-Type': 'application/octet-stream',
          'Content-Length': this.openApiPb.length,
        });
        res.end(this.openApiPb);
        return true;
      }
      body = this.openApi();
    } else if (path === '/version') body = SERVER_VERSION;
    else if (path === '/api') body = apiVersions(req.headers.host ?? '127.0.0.1');
    else if (path === '/apis') body = apiGroupList(reg);
    else if (path === '/api/v1') body = apiResourceList(reg, '', 'v1');
    else {
      const m = /^\/apis\/([^/]+)(?:\/([^/]+))?$/.exec(path);
      if (!m) return false;
      const group = m[1] ?? '';
      body = m[2] ? apiResourceList(reg, group, m[2]) : apiGroup(reg, group);
      if (!body) return false;
    }
    send(res, 200, body);
    return true;
  }

  private openApi(): Record<string, unknown> {
    return openApiDocument(SERVER_VERSION.gitVersion, this.store.registry);
  }

  private route(path: string): Route | undefined {
    const segs = path.split('/').filter(Boolean).map(decodeURIComponent);
    let group: string;
    let version: string;
    let rest: string[];
    if (segs[0] === 'api' && segs.length >= 3) {
      group = '';
      version = segs[1] ?? '';
      rest = segs.slice(2);
    } else if (segs[0] === 'apis' && segs.length >= 4) {
      group = segs[1] ?? '';
      version = segs[2] ?? '';
      rest = segs.slice(3);
    } else {
      return undefined;
    }
    const reg = this.store.registry;
    if (rest[0] === 'namespaces' && rest.length >= 3) {
      const resource = reg.find(group, version, rest[2] ?? '');
      if (resource?.namespaced) {
        if (rest.length > 5) return undefined;
        return { resource, namespace: rest[1], name: rest[3], sub: rest[4] };
      }
    }
    const resource = reg.find(group, version, rest[0] ?? '');
    if (!resource || rest.length > 3) return undefined;
    return { resource, namespace: undefined, name: rest[1], sub: rest[2] };
  }

  private async handleResource(
    req: http.IncomingMessage,
    res: Res,
    r: Route,
    q: URLSearchParams,
    verb: Verb,
  ): Promise<void> {
    const { resource, namespace, name, sub } = r;
    if (sub !== undefined && !resource.subresources.includes(sub as never)) {
      throw new StatusError(404, 'NotFound', `the server could not find the requested resource`);
    }
    if (resource.namespaced && name !== undefined && !namespace) {
      throw errors.notFound(resource.plural, resource.group, name);
    }
    switch (verb) {
      case 'list':
        this.list(req, res, resource, namespace, q);
        return;
      case 'watch':
        this.watch(req, res, resource, namespace, q);
        return;
      case 'get':
        this.get(req, res, r, q);
        return;
      case 'create':
        await this.create(req, res, r, q);
        return;
      case 'update':
        await this.replace(req, res, r, q);
        return;
      case 'patch':
        await this.patch(req, res, r, q);
        return;
      case 'delete':
        await this.delete(req, res, r, q);
        return;
      case 'deletecollection':
        await this.deleteCollection(req, res, r, q);
        return;
    }
  }

  private listQuery(namespace: string | undefined, q: URLSearchParams): ListQuery {
    return {
      namespace,
      labels: parseLabelSelector(q.get('labelSelector') ?? ''),
      fields: parseFieldSelector(q.get('fieldSelector') ?? ''),
      limit: intParam(q, 'limit'),
      continueToken: q.get('continue') ?? undefined,
    };
  }

  private list(
    req: http.IncomingMessage,
    res: Res,
    resource: ResourceType,
    namespace: string | undefined,
    q: URLSearchParams,
  ): void {
    const result = this.store.list(resource, this.listQuery(namespace, q));
    const metadata: Record<string, unknown> = { resourceVersion: result.resourceVersion };
    if (result.continueToken) metadata['continue'] = result.continueToken;
    if (result.remainingItemCount !== undefined) metadata['remainingItemCount'] = result.remainingItemCount;
    if (wantsTable(req.headers.accept)) {
      send(res, 200, toTable(resource, result.items, this.store.now(), metadata));
      return;
    }
    send(res, 200, {
      kind: `${resource.kind}List`,
      apiVersion: apiVersionOf(resource),
      metadata,
      items: result.items,
    });
  }

  private get(req: http.IncomingMessage, res: Res, r: Route, q: URLSearchParams): void {
    const { resource, namespace, name, sub } = r;
    if (!name) throw errors.methodNotAllowed('get requires a name');
    const o = this.store.mustGet(resource, namespace, name);
    if (sub === 'log') {
      this.log(res, o, q);
      return;
    }
    if (sub === 'scale') {
      send(res, 200, scaleOf(o));
      return;
    }
    if (sub && sub !== 'status')
      throw errors.methodNotAllowed(`GET is not supported on ${resource.plural}/${sub}`);
    if (wantsTable(req.headers.accept) && !sub) {
      send(
        res,
        200,
        toTable(resource, [o], this.store.now(), { resourceVersion: o.metadata.resourceVersion }),
      );
      return;
    }
    send(res, 200, o);
  }

  private log(res: Res, pod: KubeObject, q: URLSearchParams): void {
    const text =
      this.options.logs?.({
        namespace: pod.metadata.namespace ?? '',
        name: pod.metadata.name,
        container: q.get('container') ?? undefined,
        previous: boolParam(q, 'previous'),
        tailLines: intParam(q, 'tailLines'),
      }) ?? '';
    res.writeHead(200, { 'Content-Type': 'text/plain', 'Content-Length': Buffer.byteLength(text) });
    res.end(text);
  }

  /** Checks a body's apiVersion/kind/namespace/name against the URL and fills what is missing. */
  private normalizeBody(raw: unknown, r: Route, purpose: 'create' | 'update'): KubeObject {
    const { resource, namespace, name } = r;
    if (!isRecord(raw)) throw errors.badRequest('the body of the request must be a JSON object');
    const expectedApiVersion = apiVersionOf(resource);
    const apiVersion = raw['apiVersion'] ?? expectedApiVersion;
    const kind = raw['kind'] ?? resource.kind;
    if (apiVersion !== expectedApiVersion) {
      throw errors.badRequest(
        `the API version in the data (${JSON.stringify(apiVersion)}) does not match the expected API version (${expectedApiVersion})`,
      );
    }
    if (kind !== resource.kind) {
      throw errors.badRequest(
        `the kind in the data (${JSON.stringify(kind)}) does not match the expected kind (${resource.kind})`,
      );
    }
    const metaRaw = raw['metadata'] ?? {};
    if (!isRecord(metaRaw)) throw errors.badRequest('metadata must be an object');
    const meta = { ...metaRaw };
    for (const f of ['name', 'generateName', 'namespace', 'resourceVersion', 'uid'] as const) {
      if (meta[f] !== undefined && meta[f] !== null && typeof meta[f] !== 'string') {
        throw errors.badRequest(`metadata.${f} must be a string`);
      }
    }
    if (
      meta['finalizers'] !== undefined &&
      (!Array.isArray(meta['finalizers']) || meta['finalizers'].some((f) => typeof f !== 'string'))
    ) {
      throw errors.badRequest('metadata.finalizers must be a list of strings');
    }
    if (meta['ownerReferences'] !== undefined && !Array.isArray(meta['ownerReferences'])) {
      throw errors.badRequest('metadata.ownerReferences must be a list');
    }
    if (resource.namespaced) {
      if (meta['namespace'] && namespace && meta['namespace'] !== namespace) {
        throw errors.badRequest(
          'the namespace of the provided object does not match the namespace sent on the request',
        );
      }
      if (!namespace) throw errors.methodNotAllowed(`${purpose} requires a namespace`);
      meta['namespace'] = namespace;
    } else {
      delete meta['namespace'];
    }
    if (purpose === 'update') {
      if (meta['name'] !== name) {
        throw errors.badRequest(
          `the name of the object (${typeof meta['name'] === 'string' ? meta['name'] : ''}) does not match the name on the URL (${name ?? ''})`,
        );
      }
    } else {
      delete meta['resourceVersion'];
      delete meta['uid'];
    }
    if (resource.kind === 'Lease') checkLeaseTimes(raw['spec']);
    // Server-owned timestamps are ignored on input (clients echo them back, client-node as Dates).
    delete meta['creationTimestamp'];
    delete meta['managedFields'];
    return {
      ...raw,
      apiVersion: expectedApiVersion,
      kind: resource.kind,
      metadata: meta,
    } as unknown as KubeObject;
  }

  private async create(req: http.IncomingMessage, res: Res, r: Route, q: URLSearchParams): Promise<void> {
    const body = await this.readJson(req);
    if (r.name !== undefined) {
      if (r.sub === 'eviction') {
        this.evict(res, r, body);
        return;
      }
      if (r.sub === 'binding') {
        this.bind(res, r, body);
        return;
      }
      throw errors.methodNotAllowed(`POST is not supported on ${r.resource.plural}/${r.sub ?? r.name}`);
    }
    const o = this.store.create(r.resource, this.normalizeBody(body, r, 'create'), { dryRun: dryRun(q) });
    send(res, 201, o);
  }

  private evict(res: Res, r: Route, body: unknown): void {
    const opts = isRecord(body) && isRecord(body['deleteOptions']) ? body['deleteOptions'] : {};
    const grace = typeof opts['gracePeriodSeconds'] === 'number' ? opts['gracePeriodSeconds'] : undefined;
    this.store.delete(r.resource, r.namespace, r.name ?? '', { gracePeriodSeconds: grace });
    send(res, 201, { kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Success', code: 201 });
  }

  private bind(res: Res, r: Route, body: unknown): void {
    const target = isRecord(body) && isRecord(body['target']) ? body['target'] : undefined;
    const node = target?.['name'];
    if (typeof node !== 'string' || !node) throw errors.badRequest('binding target name is required');
    const pod = this.store.mustGet(r.resource, r.namespace, r.name ?? '');
    const spec = (pod['spec'] ?? {}) as { nodeName?: string };
    if (spec.nodeName) {
      throw errors.conflict(
        'pods',
        '',
        pod.metadata.name,
        `pod ${pod.metadata.name} is already assigned to node "${spec.nodeName}"`,
      );
    }
    bindPod(this.store, r.resource, pod, node);
    send(res, 201, { kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Success', code: 201 });
  }

  private async replace(req: http.IncomingMessage, res: Res, r: Route, q: URLSearchParams): Promise<void> {
    const raw = await this.readJson(req);
    if (!r.name) throw errors.methodNotAllowed('PUT requires a name');
    if (r.sub === 'scale') {
      send(res, 200, this.updateScale(r, raw, dryRun(q)));
      return;
    }
    const body = this.normalizeBody(raw, r, 'update');
    const o = this.store.replace(r.resource, body, {
      dryRun: dryRun(q),
      ...(r.sub === 'status' ? { subresource: 'status' as const } : {}),
    });
    send(res, 200, o);
  }

  private updateScale(r: Route, raw: unknown, isDryRun: boolean): object {
    const old = this.store.mustGet(r.resource, r.namespace, r.name ?? '');
    if (!isRecord(raw)) throw errors.badRequest('the body of the request must be a JSON object');
    const spec = isRecord(raw['spec']) ? raw['spec'] : {};
    const replicas = spec['replicas'];
    if (typeof replicas !== 'number' || !Number.isInteger(replicas) || replicas < 0) {
      throw errors.invalid('Scale', 'autoscaling', old.metadata.name, [
        {
          reason: 'FieldValueInvalid',
          field: 'spec.replicas',
          message: 'Invalid value: must be greater than or equal to 0',
        },
      ]);
    }
    const meta = isRecord(raw['metadata']) ? raw['metadata'] : {};
    if (
      typeof meta['resourceVersion'] === 'string' &&
      meta['resourceVersion'] &&
      meta['resourceVersion'] !== old.metadata.resourceVersion
    ) {
      throw errors.conflict(r.resource.plural, r.resource.group, old.metadata.name);
    }
    const next = structuredClone(old);
    (next['spec'] as Record<string, unknown>)['replicas'] = replicas;
    return scaleOf(this.store.replace(r.resource, next, { dryRun: isDryRun }));
  }

  private async patch(req: http.IncomingMessage, res: Res, r: Route, q: URLSearchParams): Promise<void> {
    const type = patchTypeFromContentType(req.headers['content-type']);
    const text = await this.readBody(req);
    if (!r.name) throw errors.methodNotAllowed('PATCH requires a name');
    const isDryRun = dryRun(q);
    let patchBody: Json;
    if (type === 'apply') {
      if (!q.get('fieldManager')) {
        throw errors.invalid('PatchOptions', 'meta.k8s.io', '', [
          {
            reason: 'FieldValueRequired',
            field: 'fieldManager',
            message: 'Required value: is required for apply patch',
          },
        ]);
      }
      patchBody = parseApplyBody(text);
    } else {
      try {
        patchBody = JSON.parse(text) as Json;
      } catch (e) {
        throw errors.badRequest(`error decoding patch: ${e instanceof Error ? e.message : String(e)}`);
      }
    }
    const old = this.store.get(r.resource, r.namespace, r.name);
    if (!old) {
      if (type === 'apply' && !r.sub) {
        const o = this.store.create(
          r.resource,
          this.normalizeBody(patchBody, { ...r, name: r.name }, 'create'),
          { dryRun: isDryRun },
        );
        send(res, 201, o);
        return;
      }
      throw errors.notFound(r.resource.plural, r.resource.group, r.name);
    }
    const base: Json = (r.sub === 'scale' ? scaleOf(old) : old) as unknown as Json;
    const patched: Json =
      type === 'json'
        ? applyJsonPatch(base, patchBody)
        : type === 'merge'
          ? applyMergePatch(base, patchBody)
          : applyStrategicMergePatch(base, patchBody);
    if (r.sub === 'scale') {
      send(res, 200, this.updateScale(r, patched, isDryRun));
      return;
    }
    if (!isRecord(patched)) throw errors.badRequest('the patch produced something that is not an object');
    const metaIn = isRecord(patched['metadata']) ? patched['metadata'] : {};
    const body = this.normalizeBody(
      {
        ...patched,
        metadata: { ...metaIn, name: r.name, ...(r.namespace ? { namespace: r.namespace } : {}) },
      },
      r,
      'update',
    );
    const o = this.store.replace(r.resource, body, {
      dryRun: isDryRun,
      ...(r.sub === 'status' ? { subresource: 'status' as const } : {}),
    });
    send(res, 200, o);
  }

  private async deleteOptions(req: http.IncomingMessage, q: URLSearchParams): Promise<DeleteOptions> {
    const body = await this.readJson(req);
    const b = isRecord(body) ? body : {};
    const policy = q.get('propagationPolicy') ?? b['propagationPolicy'];
    if (
      policy !== undefined &&
      policy !== null &&
      policy !== 'Background' &&
      policy !== 'Foreground' &&
      policy !== 'Orphan'
    ) {
      throw errors.invalid('DeleteOptions', 'meta.k8s.io', '', [
        {
          reason: 'FieldValueNotSupported',
          field: 'propagationPolicy',
          message: `Unsupported value: ${JSON.stringify(policy)}: supported values: "Foreground", "Background", "Orphan", "nil"`,
        },
      ]);
    }
    const grace =
      intParam(q, 'gracePeriodSeconds') ??
      (typeof b['gracePeriodSeconds'] === 'number' ? b['gracePeriodSeconds'] : undefined);
    const orphanQ = q.get('orphanDependents');
    const orphan =
      orphanQ !== null
        ? orphanQ === 'true'
        : typeof b['orphanDependents'] === 'boolean'
          ? b['orphanDependents']
          : undefined;
    const pre = isRecord(b['preconditions']) ? b['preconditions'] : undefined;
    const dry = dryRun(q) || (Array.isArray(b['dryRun']) && b['dryRun'].includes('All'));
    return {
      propagationPolicy: policy ?? undefined,
      gracePeriodSeconds: grace,
      orphanDependents: orphan,
      preconditions: pre
        ? {
            uid: typeof pre['uid'] === 'string' ? pre['uid'] : undefined,
            resourceVersion: typeof pre['resourceVersion'] === 'string' ? pre['resourceVersion'] : undefined,
          }
        : undefined,
      dryRun: dry,
    };
  }

  private async delete(req: http.IncomingMessage, res: Res, r: Route, q: URLSearchParams): Promise<void> {
    const opts = await this.deleteOptions(req, q);
    if (!r.name || r.sub) throw errors.methodNotAllowed('DELETE is not supported on subresources');
    const { object, removed } = this.store.delete(r.resource, r.namespace, r.name, opts);
    if (removed && !r.resource.returnsDeletedObject) {
      send(res, 200, {
        kind: 'Status',
        apiVersion: 'v1',
        metadata: {},
        status: 'Success',
        details: {
          name: object.metadata.name,
          group: r.resource.group,
          kind: r.resource.plural,
          uid: object.metadata.uid,
        },
      });
      return;
    }
    send(res, 200, object);
  }

  private async deleteCollection(
    req: http.IncomingMessage,
    res: Res,
    r: Route,
    q: URLSearchParams,
  ): Promise<void> {
    const opts = await this.deleteOptions(req, q);
    const query = { ...this.listQuery(r.namespace, q), limit: undefined, continueToken: undefined };
    const { items } = this.store.list(r.resource, query);
    const deleted: KubeObject[] = [];
    for (const o of items) {
      try {
        deleted.push(this.store.delete(r.resource, o.metadata.namespace, o.metadata.name, opts).object);
      } catch (e) {
        if (!(e instanceof StatusError && e.code === 404)) throw e;
      }
    }
    send(res, 200, {
      kind: `${r.resource.kind}List`,
      apiVersion: apiVersionOf(r.resource),
      metadata: { resourceVersion: this.store.resourceVersion },
      items: deleted,
    });
  }

  private watch(
    req: http.IncomingMessage,
    res: Res,
    resource: ResourceType,
    namespace: string | undefined,
    q: URLSearchParams,
  ): void {
    const query: ListQuery = {
      namespace,
      labels: parseLabelSelector(q.get('labelSelector') ?? ''),
      fields: parseFieldSelector(q.get('fieldSelector') ?? ''),
    };
    if (query.fields) this.store.checkFields(resource, query.fields);
    const rvParam = q.get('resourceVersion');
    const table = wantsTable(req.headers.accept);
    const bookmarks = boolParam(q, 'allowWatchBookmarks');
    const timeoutSeconds = intParam(q, 'timeoutSeconds');

    res.writeHead(200, {
      'Content-Type': JSON_TYPE,
      'Transfer-Encoding': 'chunked',
      'Cache-Control': 'no-cache',
    });
    res.flushHeaders();
    // Assigned below once the subscription exists; until then a stalled client just ends the response.
    let finish = (): void => {
      res.end();
    };
    const write = (type: string, object: unknown): void => {
      const payload =
        table && type !== 'ERROR' && type !== 'BOOKMARK'
          ? toTable(resource, [object as KubeObject], this.store.now())
          : object;
      res.write(`${JSON.stringify({ type, object: payload })}\n`);
      // A client that does not read is dropped rather than buffered without bound (as upstream does).
      if (res.writableLength > 32 * 1024 * 1024) finish();
    };

    let replay: StoreEvent[] = [];
    if (!rvParam || rvParam === '0') {
      for (const o of this.store.list(resource, query).items) write('ADDED', o);
    } else {
      const rv = Number(rvParam);
      if (!Number.isInteger(rv) || rv < 0) {
        write('ERROR', errors.badRequest(`invalid resource version: ${rvParam}`).toStatus());
        res.end();
        return;
      }
      try {
        replay = this.store.eventsSince(rv);
      } catch (e) {
        if (!(e instanceof StatusError)) throw e;
        write('ERROR', e.toStatus());
        res.end();
        return;
      }
    }
    const deliver = (e: StoreEvent): void => {
      if (e.resource !== resource) return;
      const now = this.store.matches(resource, e.object, query);
      const before = e.previous !== undefined && this.store.matches(resource, e.previous, query);
      if (e.type === 'DELETED') {
        if (before || now) write('DELETED', e.object);
      } else if (now && before) write('MODIFIED', e.object);
      else if (now) write('ADDED', e.object);
      else if (before) write('DELETED', e.object);
    };
    for (const e of replay) deliver(e);
    // Everything above ran synchronously, so no event can fall between replay and subscription.
    const unsubscribe = this.store.subscribe(deliver);
    this.watches.add(res);

    let done = false;
    const timers: NodeJS.Timeout[] = [];
    finish = (): void => {
      if (done) return;
      done = true;
      unsubscribe();
      uncut?.();
      for (const t of timers) clearTimeout(t);
      this.watches.delete(res);
      res.end();
    };
    const uncut: (() => void) | undefined = this.faults.onCut(finish);
    const base = this.options.watchTimeoutSeconds ?? 1800;
    const timeoutMs =
      timeoutSeconds !== undefined
        ? timeoutSeconds * 1000
        : base * 1000 * (1 + (this.options.random ?? Math.random)());
    timers.push(setTimeout(finish, timeoutMs));
    if (bookmarks) {
      const every = this.options.bookmarkIntervalMs ?? 60_000;
      const bookmark = (): void => {
        write('BOOKMARK', {
          kind: resource.kind,
          apiVersion: apiVersionOf(resource),
          metadata: { resourceVersion: this.store.resourceVersion },
        });
      };
      const tick = (): void => {
        bookmark();
        timers.push(setTimeout(tick, every));
      };
      timers.push(setTimeout(tick, every));
      // As the apiserver's watch cache (cacheWatcher.nextBookmarkTime): one more 2 s before a client's
      // timeoutSeconds, so that its next watch resumes from close to now.
      if (timeoutSeconds !== undefined) timers.push(setTimeout(bookmark, Math.max(0, timeoutMs - 2000)));
    }
    req.on('close', finish);
    res.on('error', finish);
  }

  private async handleAdmin(
    req: http.IncomingMessage,
    res: Res,
    path: string,
    method: string,
  ): Promise<void> {
    const key = `${method} ${path}`;
    switch (key) {
      case 'GET /sim/faults':
        send(res, 200, { config: this.faults.current, injected: this.faults.injected });
        return;
      case 'PUT /sim/faults': {
        const body = await this.readJson(req);
        if (!isRecord(body)) throw errors.badRequest('fault configuration must be a JSON object');
        try {
          send(res, 200, { config: this.faults.set(body) });
        } catch (e) {
          throw errors.badRequest(e instanceof Error ? e.message : String(e));
        }
        return;
      }
      case 'DELETE /sim/faults':
        this.faults.reset();
        send(res, 200, { config: this.faults.current });
        return;
      case 'POST /sim/watches/cut':
        send(res, 200, { cut: this.faults.cutWatches() });
        return;
      case 'POST /sim/compact':
        this.store.compact();
        send(res, 200, { compactedResourceVersion: this.store.resourceVersion });
        return;
      case 'GET /sim/stats':
        send(res, 200, {
          objects: this.store.count(),
          resourceVersion: this.store.resourceVersion,
          watches: this.watches.size,
        });
        return;
      default:
        throw new StatusError(404, 'NotFound', `no admin endpoint ${key}`);
    }
  }
}

/** metav1.MicroTime as the apiserver decodes it (RFC3339Micro): exactly six fractional digits. */
const MICRO_TIME = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}(Z|[+-]\d\d:\d\d)$/;

/** A Lease's times that a real apiserver cannot decode are a 400, not stored as sent (checked on 1.20). */
function checkLeaseTimes(spec: unknown): void {
  if (!isRecord(spec)) return;
  for (const [field, go] of [
    ['acquireTime', 'AcquireTime'],
    ['renewTime', 'RenewTime'],
  ] as const) {
    const v = spec[field];
    if (v === undefined || v === null) continue;
    if (typeof v !== 'string' || !MICRO_TIME.test(v) || Number.isNaN(Date.parse(v))) {
      throw errors.badRequest(
        `Lease in version "v1" cannot be handled as a Lease: v1.Lease.Spec: v1.LeaseSpec.${go}: unmarshalerDecoder: parsing time ${JSON.stringify(v)} as "2006-01-02T15:04:05.000000Z07:00"`,
      );
    }
  }
}

/** The Status reason a real apiserver pairs with an HTTP code (apimachinery's StatusReason*). */
function reasonOf(code: number): string {
  const reasons: Record<number, string> = {
    400: 'BadRequest',
    401: 'Unauthorized',
    403: 'Forbidden',
    404: 'NotFound',
    405: 'MethodNotAllowed',
    409: 'Conflict',
    410: 'Expired',
    413: 'RequestEntityTooLarge',
    415: 'UnsupportedMediaType',
    422: 'Invalid',
    429: 'TooManyRequests',
    503: 'ServiceUnavailable',
    504: 'Timeout',
  };
  return reasons[code] ?? 'InternalError';
}

export function scaleOf(o: KubeObject): object {
  const spec = (o['spec'] ?? {}) as { replicas?: number; selector?: LabelSelector };
  const status = (o['status'] ?? {}) as { replicas?: number };
  return {
    kind: 'Scale',
    apiVersion: 'autoscaling/v1',
    metadata: {
      name: o.metadata.name,
      namespace: o.metadata.namespace,
      uid: o.metadata.uid,
      resourceVersion: o.metadata.resourceVersion,
      creationTimestamp: o.metadata.creationTimestamp,
    },
    // Scale's spec.replicas is omitempty upstream: a zero is left out.
    spec: spec.replicas ? { replicas: spec.replicas } : {},
    status: {
      replicas: status.replicas ?? 0,
      selector: spec.selector ? labelSelectorToString(spec.selector) : '',
    },
  };
}

/** Sets a pod's node and its PodScheduled condition (the Binding subresource; the scheduler uses it too). */
export function bindPod(store: Store, podType: ResourceType, pod: KubeObject, node: string): KubeObject {
  const next = structuredClone(pod);
  (next['spec'] as Record<string, unknown>)['nodeName'] = node;
  const stored = store.replace(podType, next);
  const withStatus = structuredClone(stored);
  const status = (withStatus['status'] ?? {}) as { conditions?: Record<string, unknown>[] };
  const now = new Date(store.now()).toISOString().replace(/\.\d{3}Z$/, 'Z');
  status.conditions = [
    ...(status.conditions ?? []).filter((c) => c['type'] !== 'PodScheduled'),
    { type: 'PodScheduled', status: 'True', lastProbeTime: null, lastTransitionTime: now },
  ];
  withStatus['status'] = status;
  return store.replace(podType, withStatus, { subresource: 'status' });
}
