/**
 * Routing: a URL path to the resource, namespace, name and subresource it names (the apiserver's
 * `/api/v1/...` and `/apis/<group>/<version>/...` layout), and an HTTP method to the verb it is.
 */
import { errors } from './errors.js';
import type { Verb } from './faults.js';
import { boolParam } from './http-io.js';
import type { ResourceRegistry, ResourceType } from './resources.js';

export interface Route {
  resource: ResourceType;
  namespace: string | undefined;
  name: string | undefined;
  sub: string | undefined;
}

/** What a real apiserver answers for a path it serves nothing at (its message also for an unknown subresource). */
export const NO_SUCH_PATH = {
  kind: 'Status',
  apiVersion: 'v1',
  metadata: {},
  status: 'Failure',
  message: 'the server could not find the requested resource',
  reason: 'NotFound',
  details: {},
  code: 404,
};

export function route(reg: ResourceRegistry, path: string): Route | undefined {
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

export function verbOf(method: string, r: Route, q: URLSearchParams): Verb {
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
