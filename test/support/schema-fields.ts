/**
 * Which fields of a body CC may leave out, decided by the contract's zod schemas themselves, so the
 * fuzz tests never keep a list of optional fields that could drift from the schema.
 *
 * A field is a property the schema names (a key of a z.object's shape), at any depth: inside
 * lifecycles, array entries (buildpacks, env entries, egress rules, routes). Keys of maps (z.record:
 * `environment`, `user_defined_annotations`) are entries, not fields: leaving one out drops it, while
 * `null` may read as its default. A field is omittable in a body when the schema still accepts that body
 * without it; otherwise it is required there (cross-field rules count: a port health check makes `ports`
 * required, a docker lifecycle makes `docker_lifecycle` required).
 */
import type { z } from 'zod';
import { type JsonPath, formatPath, pathsOf } from './body-paths.js';

/** The parts of zod 4's schema definitions (`schema._zod.def`) the walk below reads. */
interface Def {
  type: string;
  shape?: Record<string, z.ZodType>;
  valueType?: z.ZodType;
  element?: z.ZodType;
  in?: z.ZodType;
  innerType?: z.ZodType;
  options?: readonly z.ZodType[];
  left?: z.ZodType;
  right?: z.ZodType;
  getter?: () => z.ZodType;
}

function defOf(schema: z.ZodType): Def {
  return (schema as unknown as { _zod: { def: Def } })._zod.def;
}

/** What checks a value: past optional/nullable/default, a pipe's input (optional() and withDefault()), lazy; every union option. */
function checkers(schema: z.ZodType, depth = 0): z.ZodType[] {
  if (depth > 50) return [];
  const def = defOf(schema);
  switch (def.type) {
    case 'optional':
    case 'nullable':
    case 'default':
    case 'prefault':
    case 'nonoptional':
    case 'readonly':
    case 'catch':
      return def.innerType ? checkers(def.innerType, depth + 1) : [];
    case 'pipe':
      return def.in ? checkers(def.in, depth + 1) : [];
    case 'lazy':
      return def.getter ? checkers(def.getter(), depth + 1) : [];
    case 'union':
      return (def.options ?? []).flatMap((o) => checkers(o, depth + 1));
    case 'intersection':
      return [def.left, def.right].flatMap((s) => (s ? checkers(s, depth + 1) : []));
    default:
      return [schema];
  }
}

export type PathKind = 'field' | 'entry' | 'element' | 'unknown';

/** What the last key of `path` is to `schema`: a named field, a map entry, an array element, or unknown to it. */
export function pathKind(schema: z.ZodType, path: JsonPath): PathKind {
  let current: z.ZodType[] = [schema];
  let kind: PathKind = 'unknown';
  for (const key of path) {
    const next: z.ZodType[] = [];
    kind = 'unknown';
    for (const s of current.flatMap((c) => checkers(c))) {
      const def = defOf(s);
      if (def.type === 'object' && typeof key === 'string' && def.shape && Object.hasOwn(def.shape, key)) {
        kind = 'field';
        next.push(def.shape[key] as z.ZodType);
      } else if (def.type === 'record' && typeof key === 'string' && def.valueType) {
        if (kind === 'unknown') kind = 'entry';
        next.push(def.valueType);
      } else if (def.type === 'array' && typeof key === 'number' && def.element) {
        if (kind === 'unknown') kind = 'element';
        next.push(def.element);
      }
    }
    if (next.length === 0) return 'unknown';
    current = next;
  }
  return kind;
}

/** The paths of `body` that are fields to `schema` (not map entries, array elements or unknown keys), a parent first. */
export function fieldPaths(schema: z.ZodType, body: unknown): JsonPath[] {
  return pathsOf(body).filter((path) => pathKind(schema, path) === 'field');
}

/**
 * `body` without `path`, copying only the containers on the path (the rest is shared, unchanged): cheap
 * for a body with megabytes of environment, and enough for a parse, which never writes to its input.
 */
function withoutShared(body: unknown, path: JsonPath): unknown {
  const [key, ...rest] = path;
  if (key === undefined) return body;
  if (Array.isArray(body)) {
    if (typeof key !== 'number') return body;
    const copy = [...(body as unknown[])];
    if (rest.length === 0) copy.splice(key, 1);
    else copy[key] = withoutShared(copy[key], rest);
    return copy;
  }
  if (typeof body !== 'object' || body === null || typeof key !== 'string') return body;
  const copy: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(body)) {
    if (k === key && rest.length === 0) continue;
    // defineProperty: `__proto__` is a key like any other here.
    Object.defineProperty(copy, k, {
      value: k === key ? withoutShared(v, rest) : v,
      enumerable: true,
      writable: true,
      configurable: true,
    });
  }
  return copy;
}

/** Whether `schema` accepts `body` without the field at `path`. */
export function isOmittable(schema: z.ZodType, body: unknown, path: JsonPath): boolean {
  return schema.safeParse(withoutShared(body, path)).success;
}

/**
 * A field of `body` that is omittable (or, with `required`, one that is not), chosen by `pick`: the
 * first such field from index `pick` on, round the list of fields. Undefined when there is none.
 */
export function pickField(
  schema: z.ZodType,
  body: unknown,
  pick: number,
  want: 'omittable' | 'required',
): JsonPath | undefined {
  const fields = fieldPaths(schema, body);
  for (let i = 0; i < fields.length; i++) {
    const path = fields[(pick + i) % fields.length] as JsonPath;
    if (isOmittable(schema, body, path) === (want === 'omittable')) return path;
  }
  return undefined;
}

export interface BodyFields {
  /** Fields the schema still accepts the body without. */
  omittable: JsonPath[];
  /** Fields the body is refused without. */
  required: JsonPath[];
}

/** The fields of `body` (accepted by `schema`), split into omittable and required, a parent before its children. */
export function fieldsOf(schema: z.ZodType, body: unknown): BodyFields {
  const out: BodyFields = { omittable: [], required: [] };
  for (const path of fieldPaths(schema, body)) {
    (isOmittable(schema, body, path) ? out.omittable : out.required).push(path);
  }
  return out;
}

function escape(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

/** Whether `message` has an issue at `path` (describeIssues writes `<a.b.c>: <message>`, issues joined by '; '). */
function hasIssueAt(message: string, path: JsonPath): boolean {
  return new RegExp(`(^|[:;] )${escape(formatPath(path))}: `).test(message);
}

/**
 * Whether an error message names the field at `path`: an issue at the field itself, or (a rule over its
 * parent, e.g. "lifecycle: must have exactly one of docker_lifecycle or buildpack_lifecycle") an issue
 * at an enclosing object whose text names the field's key.
 */
export function namesField(message: string, path: JsonPath): boolean {
  if (hasIssueAt(message, path)) return true;
  const key = path[path.length - 1];
  if (typeof key !== 'string') return false;
  for (let n = path.length - 1; n >= 1; n--) {
    if (hasIssueAt(message, path.slice(0, n)) && message.includes(key)) return true;
  }
  return false;
}
