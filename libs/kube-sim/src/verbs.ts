/**
 * The verbs on a routed resource: get, list, create, update, patch, delete and deletecollection (watch is
 * handed to watch.ts, the subresources beyond status to subresources.ts), each reading its body and
 * parameters as the apiserver does and answering with the stored object, a list or a Status.
 */
import type { PodLogRead } from './controllers/container-logs.js';
import type http from 'node:http';
import { StatusError, errors } from './errors.js';
import type { Verb } from './faults.js';
import { type Res, dryRun, intParam, listQuery, readBody, readJson, send, successStatus } from './http-io.js';
import {
  applyJsonPatch,
  applyMergePatch,
  applyStrategicMergePatch,
  parseApplyBody,
  patchTypeFromContentType,
} from './patch.js';
import { normalizeBody } from './request-object.js';
import { type ResourceType, apiVersionOf } from './resources.js';
import { NO_SUCH_PATH, type Route } from './routing.js';
import type { DeleteOptions, Store } from './store.js';
import { type LogRequest, bind, evict, scaleOf, sendLog, updateScale } from './subresources.js';
import { toTable, wantsTable } from './table.js';
import { type Json, type KubeObject, isRecord } from './types.js';
import type { WatchStreams } from './watch.js';

export interface VerbOptions {
  /** Pod logs, from the simulated kubelet. */
  logs?: ((req: LogRequest) => PodLogRead) | undefined;
  maxBodyBytes?: number | undefined;
}

export class Verbs {
  constructor(
    private readonly store: Store,
    private readonly watches: WatchStreams,
    private readonly options: VerbOptions,
  ) {}

  async serve(req: http.IncomingMessage, res: Res, r: Route, q: URLSearchParams, verb: Verb): Promise<void> {
    const { resource, namespace, name, sub } = r;
    if (sub !== undefined && !resource.subresources.includes(sub as never)) {
      throw new StatusError(404, 'NotFound', NO_SUCH_PATH.message);
    }
    if (resource.namespaced && name !== undefined && !namespace) {
      throw errors.notFound(resource.plural, resource.group, name);
    }
    switch (verb) {
      case 'list':
        this.list(req, res, resource, namespace, q);
        return;
      case 'watch':
        this.watches.serve(req, res, resource, namespace, q);
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

  private list(
    req: http.IncomingMessage,
    res: Res,
    resource: ResourceType,
    namespace: string | undefined,
    q: URLSearchParams,
  ): void {
    const result = this.store.list(resource, listQuery(namespace, q));
    const metadata: Record<string, unknown> = { resourceVersion: result.resourceVersion };
    if (result.continueToken) metadata['continue'] = result.continueToken;
    if (result.remainingItemCount !== undefined) metadata['remainingItemCount'] = result.remainingItemCount;
    if (wantsTable(req.headers.accept)) {
      send(res, 200, toTable(resource, result.items, this.store.now(), metadata));
      return;
    }
    send(res, 200, listOf(resource, metadata, result.items));
  }

  private get(req: http.IncomingMessage, res: Res, r: Route, q: URLSearchParams): void {
    const { resource, namespace, name, sub } = r;
    if (!name) throw errors.methodNotAllowed('get requires a name');
    const o = this.store.mustGet(resource, namespace, name);
    if (sub === 'log') {
      sendLog(res, this.options.logs, o, q, this.store.now());
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

  private async create(req: http.IncomingMessage, res: Res, r: Route, q: URLSearchParams): Promise<void> {
    const body = await readJson(req, this.options.maxBodyBytes);
    if (r.name !== undefined) {
      if (r.sub === 'eviction') {
        evict(this.store, res, r, body);
        return;
      }
      if (r.sub === 'binding') {
        bind(this.store, res, r, body);
        return;
      }
      throw errors.methodNotAllowed(`POST is not supported on ${r.resource.plural}/${r.sub ?? r.name}`);
    }
    const o = this.store.create(r.resource, normalizeBody(body, r, 'create'), { dryRun: dryRun(q) });
    send(res, 201, o);
  }

  private async replace(req: http.IncomingMessage, res: Res, r: Route, q: URLSearchParams): Promise<void> {
    const raw = await readJson(req, this.options.maxBodyBytes);
    if (!r.name) throw errors.methodNotAllowed('PUT requires a name');
    if (r.sub === 'scale') {
      send(res, 200, updateScale(this.store, r, raw, dryRun(q)));
      return;
    }
    const body = normalizeBody(raw, r, 'update');
    send(res, 200, this.store.replace(r.resource, body, this.replaceOptions(r, dryRun(q))));
  }

  private async patch(req: http.IncomingMessage, res: Res, r: Route, q: URLSearchParams): Promise<void> {
    const type = patchTypeFromContentType(req.headers['content-type']);
    const text = await readBody(req, this.options.maxBodyBytes);
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
        const o = this.store.create(r.resource, normalizeBody(patchBody, { ...r, name: r.name }, 'create'), {
          dryRun: isDryRun,
        });
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
      send(res, 200, updateScale(this.store, r, patched, isDryRun));
      return;
    }
    if (!isRecord(patched)) throw errors.badRequest('the patch produced something that is not an object');
    const metaIn = isRecord(patched['metadata']) ? patched['metadata'] : {};
    const body = normalizeBody(
      {
        ...patched,
        metadata: { ...metaIn, name: r.name, ...(r.namespace ? { namespace: r.namespace } : {}) },
      },
      r,
      'update',
    );
    send(res, 200, this.store.replace(r.resource, body, this.replaceOptions(r, isDryRun)));
  }

  /** An update (PUT or PATCH) of the object or of its status subresource. */
  private replaceOptions(r: Route, isDryRun: boolean): { dryRun: boolean; subresource?: 'status' } {
    return { dryRun: isDryRun, ...(r.sub === 'status' ? { subresource: 'status' as const } : {}) };
  }

  private async deleteOptions(req: http.IncomingMessage, q: URLSearchParams): Promise<DeleteOptions> {
    const body = await readJson(req, this.options.maxBodyBytes);
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
      send(
        res,
        200,
        successStatus({
          details: {
            name: object.metadata.name,
            group: r.resource.group,
            kind: r.resource.plural,
            uid: object.metadata.uid,
          },
        }),
      );
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
    const query = { ...listQuery(r.namespace, q), limit: undefined, continueToken: undefined };
    const { items } = this.store.list(r.resource, query);
    const deleted: KubeObject[] = [];
    for (const o of items) {
      try {
        deleted.push(this.store.delete(r.resource, o.metadata.namespace, o.metadata.name, opts).object);
      } catch (e) {
        if (!(e instanceof StatusError && e.code === 404)) throw e;
      }
    }
    send(res, 200, listOf(r.resource, { resourceVersion: this.store.resourceVersion }, deleted));
  }
}

/** A `<Kind>List` of the resource's objects. */
function listOf(resource: ResourceType, metadata: Record<string, unknown>, items: KubeObject[]): object {
  return { kind: `${resource.kind}List`, apiVersion: apiVersionOf(resource), metadata, items };
}
