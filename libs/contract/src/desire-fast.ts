/**
 * The desire body checked without zod, for the API's busiest route. It accepts exactly what
 * `desireLrpSchema` accepts and returns what it returns (the fuzz suite compares the two on valid,
 * mutated and hostile bodies); anything it does not accept gives `undefined`, and the caller then parses
 * with zod, whose issues word the 400. Zod allocates a result and an issue list per field, about 12 KB a
 * desire, and the GC that cost was a third of the API's CPU at ingest (decision 0002).
 */
import { DESIRE_LIMITS as L, type DesireLrpRequest, USER_ANNOTATIONS_MAX_BYTES } from './schemas.js';
import { APP_ENV_NAME, DNS_LABEL, DNS_SUBDOMAIN, LABEL_VALUE, QUALIFIED_NAME } from '@opi/domain';

/** Thrown inside this module only: the body is not one the fast path takes. */
class NotFast extends Error {}
const notFast = new NotFast();

type Json = unknown;

function fail(): never {
  throw notFast;
}

function object(v: Json): Record<string, Json> {
  if (typeof v !== 'object' || v === null || Array.isArray(v)) fail();
  return v as Record<string, Json>;
}

/** Code points, as zod measures a string's length: a surrogate pair is one. */
function codePoints(s: string): number {
  let n = s.length;
  for (let i = 0; i < s.length - 1; i++) {
    if ((s.charCodeAt(i) & 0xfc00) === 0xd800 && (s.charCodeAt(i + 1) & 0xfc00) === 0xdc00) {
      n--;
      i++;
    }
  }
  return n;
}

function str(v: Json, max: number, min = 0): string {
  if (typeof v !== 'string') fail();
  // Counted only where units and code points can disagree about the limit.
  if (v.length > max && codePoints(v) > max) fail();
  if (v.length < min || (v.length < 2 * min && codePoints(v) < min)) fail();
  return v;
}

function matching(v: Json, pattern: RegExp): string {
  if (typeof v !== 'string' || !pattern.test(v)) fail();
  return v;
}

function int(v: Json, min: number, max = Number.MAX_SAFE_INTEGER): number {
  if (typeof v !== 'number' || !Number.isSafeInteger(v) || v < min || v > max) fail();
  return v;
}

/** A field that may be absent or null (CC's nil), read then as `dflt`. */
function or<T>(v: Json, dflt: T, read: (v: Json) => T): T {
  return v === undefined || v === null ? dflt : read(v);
}

function list<T>(v: Json, max: number, item: (v: Json) => T): T[] {
  if (!Array.isArray(v) || v.length > max) fail();
  // By index, as zod reads: a hole is an undefined item, where map would skip it.
  const out: T[] = [];
  for (let i = 0; i < v.length; i++) out.push(item((v as Json[])[i]));
  return out;
}

/** A map of names to text: keys by pattern, values as `text(max)` (null reads as ""). */
function stringMap(v: Json, key: RegExp, maxEntries: number, maxValue: number): Record<string, string> {
  // A plain object, of this realm or another (zod's record takes both).
  const proto: unknown = typeof v === 'object' && v !== null ? Object.getPrototypeOf(v) : undefined;
  if (proto === undefined || (proto !== null && Object.getPrototypeOf(proto) !== null)) fail();
  const map = v as Record<string, Json>;
  const out: Record<string, string> = {};
  let n = 0;
  for (const k in map) {
    // A key zod would assign to a prototype; zod decides what that means.
    if (k === '__proto__' || !key.test(k) || ++n > maxEntries) fail();
    out[k] = or(map[k], '', (x) => str(x, maxValue));
  }
  return out;
}

function text(v: Json, max: number): string {
  return or(v, '', (x) => str(x, max));
}

function optional<T>(v: Json, read: (v: Json) => T): T | undefined {
  return or<T | undefined>(v, undefined, read);
}

function lifecycle(v: Json): DesireLrpRequest['lifecycle'] {
  const l = object(v);
  const docker = optional(l['docker_lifecycle'], (x) => {
    const d = object(x);
    const image = typeof d['image'] === 'string' ? d['image'].trim() : fail();
    return {
      image: str(image, L.image, 1),
      command: or(d['command'], [], (c) => list(c, L.commandArgs, (a) => str(a, L.commandArg))),
      registry_username: optional(d['registry_username'], (u) => str(u, L.registryUsername)),
      registry_password: optional(d['registry_password'], (p) => str(p, L.registryPassword)),
    };
  });
  const buildpack = optional(l['buildpack_lifecycle'], (x) => {
    const b = object(x);
    return {
      droplet_hash: matching(b['droplet_hash'], /^[a-f0-9]{1,128}$/i),
      droplet_guid: matching(b['droplet_guid'], LABEL_VALUE),
      start_command: text(b['start_command'], L.startCommand),
    };
  });
  if ((docker ? 1 : 0) + (buildpack ? 1 : 0) !== 1) fail();
  return { docker_lifecycle: docker, buildpack_lifecycle: buildpack };
}

function egressRule(v: Json): DesireLrpRequest['egress_rules'][number] {
  const r = object(v);
  const pair = (x: Json, a: string, b: string) => {
    const o = object(x);
    return {
      [a]: or(o[a], 0, (n) => int(n, Number.MIN_SAFE_INTEGER)),
      [b]: or(o[b], 0, (n) => int(n, Number.MIN_SAFE_INTEGER)),
    };
  };
  return {
    protocol: or(r['protocol'], 'all', (p) => str(p, L.egressProtocol)),
    destinations: or(r['destinations'], [], (d) =>
      list(d, L.egressItems, (x) => str(x, L.egressDestination)),
    ),
    ports: optional(r['ports'], (p) => list(p, L.egressItems, (x) => int(x, 0, 65535))),
    portRange: optional(r['portRange'], (x) => pair(x, 'start', 'end') as { start: number; end: number }),
    icmpInfo: optional(r['icmpInfo'], (x) => pair(x, 'type', 'code') as { type: number; code: number }),
    log: or(r['log'], false, (b) => (typeof b === 'boolean' ? b : fail())),
    annotations: optional(r['annotations'], (a) => list(a, L.egressItems, (x) => str(x, L.egressAnnotation))),
  };
}

function routes(v: Json): DesireLrpRequest['routes'] {
  const r = object(v);
  return {
    'cf-router': or(r['cf-router'], [], (rs) =>
      list(rs, L.routes, (x) => {
        const o = object(x);
        return {
          hostname: str(o['hostname'], L.hostname),
          port: optional(o['port'], (p) => int(p, 0, 65535)),
        };
      }),
    ),
  };
}

function volumeMounts(v: Json): DesireLrpRequest['volume_mounts'] {
  const dirs = new Set<string>();
  return list(v, L.volumeMounts, (x) => {
    const m = object(x);
    const mountDir = str(matching(m['mount_dir'], /^\/[^\0]*$/), L.mountDir);
    if (dirs.has(mountDir)) fail();
    dirs.add(mountDir);
    return { volume_id: matching(m['volume_id'], DNS_SUBDOMAIN), mount_dir: mountDir };
  });
}

function desire(v: Json): DesireLrpRequest {
  const b = object(v);
  const guid = matching(b['guid'], LABEL_VALUE);
  const version = matching(b['version'], LABEL_VALUE);
  const processGuid = str(b['process_guid'], L.processGuid, 3);
  if (processGuid !== `${guid}-${version}`) fail();
  const healthCheckType = or(b['health_check_type'], 'port' as const, (t) =>
    t === 'port' || t === 'http' || t === 'process' || t === 'none' ? t : fail(),
  );
  const ports = or(b['ports'], [], (p) => list(p, L.ports, (x) => int(x, 1, 65535)));
  if ((healthCheckType === 'http' || healthCheckType === 'port') && ports.length === 0) fail();
  const annotations = or(b['user_defined_annotations'], {}, (a) =>
    stringMap(a, QUALIFIED_NAME, L.annotations, L.mapValue),
  );
  let bytes = 0;
  for (const k in annotations) bytes += Buffer.byteLength(k) + Buffer.byteLength(annotations[k] ?? '');
  if (bytes > USER_ANNOTATIONS_MAX_BYTES) fail();
  return {
    guid,
    version,
    process_guid: processGuid,
    process_type: or(b['process_type'], 'web', (x) => str(x, L.processType)),
    app_guid: text(b['app_guid'], L.guidText),
    app_name: text(b['app_name'], L.nameText),
    space_guid: text(b['space_guid'], L.guidText),
    space_name: text(b['space_name'], L.nameText),
    organization_guid: text(b['organization_guid'], L.guidText),
    organization_name: text(b['organization_name'], L.nameText),
    namespace: or(b['namespace'], '', (n) => (n === '' ? '' : matching(n, DNS_LABEL))),
    ports,
    environment: or(b['environment'], {}, (e) => stringMap(e, APP_ENV_NAME, L.environment, L.mapValue)),
    instances: int(b['instances'], 0, L.instances),
    last_updated: text(b['last_updated'], L.lastUpdated),
    health_check_type: healthCheckType,
    health_check_http_endpoint: text(b['health_check_http_endpoint'], L.httpEndpoint),
    health_check_timeout_ms: or(b['health_check_timeout_ms'], 0, (x) => int(x, 0)),
    start_timeout_ms: or(b['start_timeout_ms'], 0, (x) => int(x, 0)),
    memory_mb: int(b['memory_mb'], 1, L.memoryMb),
    disk_mb: int(b['disk_mb'], 1, L.diskMb),
    cpu_weight: or(b['cpu_weight'], 1, (x) => int(x, 1, 100)),
    volume_mounts: or(b['volume_mounts'], [], volumeMounts),
    lifecycle: lifecycle(b['lifecycle']),
    user_defined_annotations: annotations,
    routes: optional(b['routes'], routes),
    egress_rules: or(b['egress_rules'], [], (r) => list(r, L.egressRules, egressRule)),
    placement_tags: or(b['placement_tags'], [], (t) =>
      list(t, L.placementTags, (x) => str(x, L.placementTag)),
    ),
  };
}

/** `desireLrpSchema.parse(value)` when the body is valid and plain; otherwise undefined (ask zod). */
export function parseDesireFast(value: unknown): DesireLrpRequest | undefined {
  try {
    return desire(value);
  } catch (err) {
    if (err === notFast) return undefined;
    throw err;
  }
}
