/**
 * The object a create, update or patch sends, checked against its URL as the apiserver's decoder does
 * (apiVersion, kind, namespace, name, metadata field types, a Lease's times) and completed from it, with
 * server-owned fields dropped.
 */
import { errors } from './errors.js';
import { apiVersionOf } from './resources.js';
import type { Route } from './routing.js';
import { type KubeObject, isRecord } from './types.js';

/** Checks a body's apiVersion/kind/namespace/name against the URL and fills what is missing. */
export function normalizeBody(raw: unknown, r: Route, purpose: 'create' | 'update'): KubeObject {
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
