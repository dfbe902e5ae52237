/**
 * What CC sends for the router, the network and the scheduler (routes, egress rules, placement tags), on
 * the workload in an annotation each, so a rebuild after a Redis loss gets the record back whole. They
 * change nothing in the pods: they sit on the workload's own metadata, never on its pod template, so an
 * update that changes the routes rolls nothing. The routes use Eirini's key and format (the `cf-router`
 * array as JSON under `cloudfoundry.org/routes`).
 *
 * They share what the other annotations leave of the API server's 256 KiB. One that does not fit is
 * replaced by a note saying so; the rebuild does not restore a record from a workload with such a note
 * (or with a value it cannot read), and CC, which desires every process missing from GET /apps again
 * (its sync, every 30 s), sends the whole record again.
 */
import type { DesiredLrp, EgressRule, Route } from '@opi/domain';
import { arrayOf, isInteger, isPort, isRecord, isString, onlyKeys } from './json-fields.js';

export const ANNOTATION_ROUTES = 'cloudfoundry.org/routes';
export const ANNOTATION_EGRESS_RULES = 'cloudfoundry.org/egress_rules';
export const ANNOTATION_PLACEMENT_TAGS = 'cloudfoundry.org/placement_tags';

export type KeptFields = Pick<DesiredLrp, 'routes' | 'egressRules' | 'placementTags'>;

/** The kept fields in the order they get room: the smallest (and most bounded) first. */
const KEPT = [
  ['placementTags', ANNOTATION_PLACEMENT_TAGS],
  ['routes', ANNOTATION_ROUTES],
  ['egressRules', ANNOTATION_EGRESS_RULES],
] as const satisfies readonly (readonly [keyof KeptFields, string])[];

/** Starts the note that stands for a value too large for the room left (never valid JSON). */
export const OMITTED = 'omitted:';

export function annotationBytes(annotations: Record<string, string>): number {
  let n = 0;
  for (const [k, v] of Object.entries(annotations)) n += Buffer.byteLength(k) + Buffer.byteLength(v);
  return n;
}

/**
 * The kept fields' annotations within `room` bytes (keys and values). A field the record does not have
 * (one written before they were kept) gets none; an empty one gets `[]`, so the rebuild gives back
 * exactly what the record held.
 */
export function keptAnnotations(lrp: KeptFields, room: number): Record<string, string> {
  const out: Record<string, string> = {};
  let left = room;
  for (const [field, key] of KEPT) {
    const value = lrp[field];
    if (value === undefined) continue;
    const json = JSON.stringify(value);
    const bytes = Buffer.byteLength(json);
    const text =
      Buffer.byteLength(key) + bytes <= left
        ? json
        : `${OMITTED} ${bytes} bytes, more than the ${Math.max(0, left)} left of the workload's annotations; kept in Redis only`;
    out[key] = text;
    left -= Buffer.byteLength(key) + Buffer.byteLength(text);
  }
  return out;
}

/** The fields that did not fit, by the notes keptAnnotations left (for the converge's log). */
export function omittedFields(annotations: Record<string, string>): (keyof KeptFields)[] {
  return KEPT.filter(([, key]) => annotations[key]?.startsWith(OMITTED)).map(([field]) => field);
}

const ROUTE_KEYS = ['hostname', 'port'] as const;
const RULE_KEYS = [
  'protocol',
  'destinations',
  'ports',
  'portRange',
  'icmpInfo',
  'log',
  'annotations',
] as const;

// Objects with keys other than those written are refused rather than read in part: dropping a key
// could widen what a rule allows (a `port_range` read as no range is a rule for every port).
function routeOf(v: unknown): Route | undefined {
  if (!isRecord(v) || !onlyKeys(v, ROUTE_KEYS) || !isString(v['hostname'])) return undefined;
  const { hostname, port } = v;
  if (port === undefined) return { hostname };
  return isPort(port) ? { hostname, port } : undefined;
}

function pairOf<A extends string, B extends string>(
  v: unknown,
  a: A,
  b: B,
): Record<A | B, number> | undefined {
  if (!isRecord(v) || !onlyKeys(v, [a, b]) || !isInteger(v[a]) || !isInteger(v[b])) return undefined;
  return { [a]: v[a], [b]: v[b] } as Record<A | B, number>;
}

/** An optional part as `{key: value}`: `{}` when absent, undefined when present but unreadable. */
function part<K extends string, T>(
  key: K,
  raw: unknown,
  read: (v: unknown) => T | undefined,
): Partial<Record<K, T>> | undefined {
  if (raw === undefined) return {};
  const value = read(raw);
  return value === undefined ? undefined : ({ [key]: value } as Partial<Record<K, T>>);
}

function egressRuleOf(v: unknown): EgressRule | undefined {
  if (!isRecord(v) || !onlyKeys(v, RULE_KEYS)) return undefined;
  const { protocol, log } = v;
  const destinations = arrayOf(v['destinations'], isString);
  if (!isString(protocol) || !destinations || typeof log !== 'boolean') return undefined;
  const ports = part('ports', v['ports'], (p) => arrayOf(p, isPort));
  const portRange = part('portRange', v['portRange'], (p) => pairOf(p, 'start', 'end'));
  const icmpInfo = part('icmpInfo', v['icmpInfo'], (p) => pairOf(p, 'type', 'code'));
  const annotations = part('annotations', v['annotations'], (p) => arrayOf(p, isString));
  if (!ports || !portRange || !icmpInfo || !annotations) return undefined;
  return { protocol, destinations, ...ports, ...portRange, ...icmpInfo, log, ...annotations };
}

/** A JSON array from an annotation, every item read by `item`; undefined if any is not. */
function listOf<T>(json: unknown, item: (v: unknown) => T | undefined): T[] | undefined {
  if (!isString(json)) return undefined;
  let raw: unknown;
  try {
    raw = JSON.parse(json);
  } catch {
    return undefined;
  }
  if (!Array.isArray(raw)) return undefined;
  const out: T[] = [];
  for (const x of raw) {
    const v = item(x);
    if (v === undefined) return undefined;
    out.push(v);
  }
  return out;
}

/** The routes a workload's annotation holds; undefined when it has none or it cannot be read whole. */
export function routesFromAnnotations(annotations: Record<string, string> | undefined): Route[] | undefined {
  const raw = annotations?.[ANNOTATION_ROUTES];
  return raw === undefined ? undefined : listOf(raw, routeOf);
}

/**
 * The kept fields from a workload's annotations, each checked item by item. An annotation that is absent
 * (a workload made before they were kept) leaves its field absent; undefined when one is present but is
 * a note (too large) or cannot be read whole.
 */
export function keptFromAnnotations(annotations: Record<string, string>): KeptFields | undefined {
  const tag = (v: unknown) => (isString(v) ? v : undefined);
  const tags = part('placementTags', annotations[ANNOTATION_PLACEMENT_TAGS], (j) => listOf(j, tag));
  const routes = part('routes', annotations[ANNOTATION_ROUTES], (j) => listOf(j, routeOf));
  const rules = part('egressRules', annotations[ANNOTATION_EGRESS_RULES], (j) => listOf(j, egressRuleOf));
  if (!tags || !routes || !rules) return undefined;
  return { ...tags, ...routes, ...rules };
}
