/**
 * The four PATCH body types the apiserver accepts: JSON merge patch, strategic merge patch, JSON patch and
 * server-side-apply bodies. Every function returns new values and leaves its inputs alone, so a caller can
 * patch a stored object and still compare against the original.
 */
// fast-json-patch is CommonJS without an `exports` map, and its `index.js` copies its functions over
// with Object.assign, which Node's ESM loader cannot see as named exports. The default import is
// `module.exports`, which does have them.
import jsonpatch from 'fast-json-patch';
import type { Operation } from 'fast-json-patch';
import { CORE_SCHEMA, load as loadYaml } from 'js-yaml';
import { errors, StatusError } from './errors.js';
import type { Json, JsonObject } from './types.js';

export type PatchType = 'json' | 'merge' | 'strategic' | 'apply';

function isObject(value: Json | undefined): value is JsonObject {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function has(obj: JsonObject, key: string): boolean {
  return Object.hasOwn(obj, key);
}

/** Defines rather than assigns, so that a `__proto__` key from the wire stays an ordinary property. */
function setKey(obj: JsonObject, key: string, value: Json): void {
  Object.defineProperty(obj, key, { value, writable: true, enumerable: true, configurable: true });
}

function removeKey(obj: JsonObject, key: string): void {
  Reflect.deleteProperty(obj, key);
}

function cloneJson(value: Json): Json {
  if (Array.isArray(value)) return value.map(cloneJson);
  if (isObject(value)) {
    const out: JsonObject = {};
    for (const [k, v] of Object.entries(value)) setKey(out, k, cloneJson(v));
    return out;
  }
  return value;
}

function jsonEqual(a: Json | undefined, b: Json | undefined): boolean {
  if (a === b) return true;
  if (Array.isArray(a) && Array.isArray(b)) {
    return a.length === b.length && a.every((v, i) => jsonEqual(v, b[i]));
  }
  if (isObject(a) && isObject(b)) {
    const keys = Object.keys(a);
    return keys.length === Object.keys(b).length && keys.every((k) => has(b, k) && jsonEqual(a[k], b[k]));
  }
  return false;
}

// ---------------------------------------------------------------------------------------------------------
// RFC 7386 JSON merge patch

/** Merges `patch` into `target`, which the caller owns and which is changed in place. */
function mergeInto(target: Json, patch: Json): Json {
  if (!isObject(patch)) return cloneJson(patch);
  const out = isObject(target) ? target : {};
  for (const [k, v] of Object.entries(patch)) {
    if (v === null) removeKey(out, k);
    else setKey(out, k, mergeInto(has(out, k) ? (out[k] ?? null) : null, v));
  }
  return out;
}

export function applyMergePatch(target: Json, patch: Json): Json {
  return mergeInto(cloneJson(target), patch);
}

// ---------------------------------------------------------------------------------------------------------
// Strategic merge patch

/**
 * Merge keys of the list fields the simulator's kinds use, by field name (apimachinery looks them up in
 * the Go struct tags; we have no schema, and these names mean the same thing wherever they appear).
 */
const mergeKeys = new Map<string, string>([
  ['containers', 'name'],
  ['initContainers', 'name'],
  ['ephemeralContainers', 'name'],
  ['env', 'name'],
  ['volumes', 'name'],
  ['imagePullSecrets', 'name'],
  ['volumeMounts', 'mountPath'],
  ['conditions', 'type'],
  ['ownerReferences', 'uid'],
]);

/** Lists of scalars merged as sets. */
const setLists = new Set(['finalizers']);

const directiveMarker = '$patch';
const retainKeysDirective = '$retainKeys';
const deleteFromPrimitiveListPrefix = '$deleteFromPrimitiveList/';
const setElementOrderPrefix = '$setElementOrder/';

function mergeKeyFor(field: string, original: Json[], patch: Json[]): string | undefined {
  if (field === 'ports') {
    // Container ports are keyed by containerPort, Service ports by port.
    const all = [...original, ...patch];
    return all.some((el) => isObject(el) && has(el, 'containerPort')) ? 'containerPort' : 'port';
  }
  return mergeKeys.get(field);
}

function noMergeKey(el: JsonObject, key: string): StatusError {
  return errors.badRequest(`map: ${JSON.stringify(el)} does not contain declared merge key: ${key}`);
}

function badPatchType(directive: Json | undefined, el: JsonObject): StatusError {
  return errors.badRequest(`unknown patch type: ${JSON.stringify(directive)} in map: ${JSON.stringify(el)}`);
}

/**
 * Merges `patch` into `original` (owned by the caller, changed in place). Returns undefined when the
 * patch says `$patch: delete`, so the caller drops the field.
 */
function strategicMergeMap(original: JsonObject, patch: JsonObject): JsonObject | undefined {
  if (has(patch, directiveMarker)) {
    const directive = patch[directiveMarker];
    if (directive === 'delete') return undefined;
    if (directive === 'replace') {
      const replaced = cloneJson(patch) as JsonObject;
      removeKey(replaced, directiveMarker);
      return replaced;
    }
    throw badPatchType(directive, patch);
  }

  if (has(patch, retainKeysDirective)) applyRetainKeys(original, patch);

  const deletions: [string, Json][] = [];
  for (const [k, v] of Object.entries(patch)) {
    if (k === retainKeysDirective || k.startsWith(setElementOrderPrefix)) continue; // ordering is not simulated
    if (k.startsWith(deleteFromPrimitiveListPrefix)) {
      deletions.push([k.slice(deleteFromPrimitiveListPrefix.length), v]);
      continue;
    }
    if (v === null) {
      removeKey(original, k);
      continue;
    }
    const current = has(original, k) ? original[k] : undefined;
    if (isObject(v)) {
      const merged = strategicMergeMap(isObject(current) ? current : {}, v);
      if (merged === undefined) removeKey(original, k);
      else setKey(original, k, merged);
    } else if (Array.isArray(v)) {
      setKey(original, k, strategicMergeList(k, Array.isArray(current) ? current : [], v));
    } else {
      setKey(original, k, v);
    }
  }

  // After the merges, so that a patch may add to a list and delete from it in one go.
  for (const [field, values] of deletions) {
    if (!Array.isArray(values) || values.some((v) => typeof v === 'object' && v !== null)) {
      throw errors.badRequest('invalid patch format of primitive list');
    }
    const current = has(original, field) ? original[field] : undefined;
    if (Array.isArray(current)) {
      setKey(
        original,
        field,
        current.filter((el) => !values.some((v) => jsonEqual(v, el))),
      );
    }
  }
  return original;
}

/** `$retainKeys`: fields of `original` not listed are cleared; the patch may only set listed fields. */
function applyRetainKeys(original: JsonObject, patch: JsonObject): void {
  const retain = patch[retainKeysDirective];
  if (!Array.isArray(retain) || !retain.every((k) => typeof k === 'string')) {
    throw errors.badRequest('invalid patch format of retainKeys');
  }
  const keep = new Set(retain);
  for (const [k, v] of Object.entries(patch)) {
    if (k === retainKeysDirective || k === directiveMarker || v === null) continue;
    if (k.startsWith(deleteFromPrimitiveListPrefix) || k.startsWith(setElementOrderPrefix)) continue;
    if (!keep.has(k)) throw errors.badRequest('invalid patch format of retainKeys');
  }
  for (const k of Object.keys(original)) if (!keep.has(k)) removeKey(original, k);
}

function strategicMergeList(field: string, original: Json[], patch: Json[]): Json[] {
  if (setLists.has(field) && patch.every((v) => !isObject(v) && !Array.isArray(v))) {
    const out = [...original];
    for (const v of patch) if (!out.some((o) => jsonEqual(o, v))) out.push(v);
    return out;
  }
  const key = mergeKeyFor(field, original, patch);
  if (key === undefined || !patch.every(isObject)) return patch.map(cloneJson);

  let result = original;
  let replace = false;
  const elements: JsonObject[] = [];
  for (const el of patch) {
    if (!has(el, directiveMarker)) {
      elements.push(el);
      continue;
    }
    const directive = el[directiveMarker];
    if (directive === 'delete') {
      if (!has(el, key)) throw noMergeKey(el, key);
      result = result.filter((o) => !(isObject(o) && has(o, key) && jsonEqual(o[key], el[key])));
    } else if (directive === 'replace') {
      replace = true;
    } else if (directive === 'merge') {
      throw errors.badRequest('merging lists cannot yet be specified in the patch');
    } else {
      throw badPatchType(directive, el);
    }
  }
  if (replace) result = [];

  for (const el of elements) {
    if (!has(el, key)) throw noMergeKey(el, key);
    const index = result.findIndex((o) => isObject(o) && has(o, key) && jsonEqual(o[key], el[key]));
    const existing = index >= 0 ? result[index] : undefined;
    const merged = strategicMergeMap(isObject(existing) ? existing : {}, el) ?? {};
    if (index >= 0) result[index] = merged;
    else result.push(merged);
  }
  return result;
}

/**
 * Strategic merge patch without schemas: merge patch, except that the lists in the table above merge by
 * key, `finalizers` merge as a set, and the `$patch`, `$retainKeys`, `$deleteFromPrimitiveList/` and
 * `$setElementOrder/` directives are honoured or stripped.
 */
export function applyStrategicMergePatch(target: Json, patch: Json): Json {
  if (!isObject(patch)) {
    // apimachinery unmarshals the patch into a map and fails the same way.
    throw errors.badRequest('invalid JSON document');
  }
  const base = isObject(target) ? (cloneJson(target) as JsonObject) : {};
  return strategicMergeMap(base, patch) ?? {};
}

// ---------------------------------------------------------------------------------------------------------
// RFC 6902 JSON patch

/** Go's name for a JSON value's type, as encoding/json prints it in unmarshal errors. */
function goJsonType(value: unknown): string {
  if (Array.isArray(value)) return 'array';
  if (value === null) return 'null';
  if (typeof value === 'boolean') return 'bool';
  if (typeof value === 'string' || typeof value === 'number') return typeof value;
  return 'object';
}

export function applyJsonPatch(target: Json, ops: unknown): Json {
  if (!Array.isArray(ops)) {
    // What a real apiserver answers when client-node sends an object labelled as json-patch.
    throw errors.badRequest(
      `json: cannot unmarshal ${goJsonType(ops)} into Go value of type jsonpatch.Patch`,
    );
  }
  for (const op of ops) {
    if (op !== null && (typeof op !== 'object' || Array.isArray(op))) {
      throw errors.badRequest(
        `json: cannot unmarshal ${goJsonType(op)} into Go value of type jsonpatch.Operation`,
      );
    }
  }
  // Cloned so that values from the ops are not shared with the result.
  const operations = cloneJson(ops as Json) as unknown as Operation[];
  try {
    // validate=true checks each op; mutateDocument=false applies to a deep copy of the target.
    return jsonpatch.applyPatch(target, operations, true, false).newDocument;
  } catch (err) {
    // The library appends the op and the whole document on further lines; the first line says what failed.
    const message = (err instanceof Error ? err.message : String(err)).split('\n')[0] ?? '';
    const index = err instanceof jsonpatch.JsonPatchError ? err.index : undefined;
    throw new StatusError(422, 'Invalid', message, {
      causes: [
        {
          reason: 'FieldValueInvalid',
          message,
          ...(index === undefined ? {} : { field: `patch[${index}]` }),
        },
      ],
    });
  }
}

// ---------------------------------------------------------------------------------------------------------
// Server-side apply bodies and content types

/**
 * Apply bodies are YAML, and JSON is YAML (client-node sends JSON under the apply content type). The core
 * schema keeps timestamps and other YAML-only types as strings.
 */
export function parseApplyBody(raw: string): Json {
  let doc: unknown;
  try {
    doc = loadYaml(raw, { schema: CORE_SCHEMA });
  } catch (err) {
    throw errors.badRequest(`error decoding YAML: ${err instanceof Error ? err.message : String(err)}`);
  }
  if (typeof doc !== 'object' || doc === null || Array.isArray(doc)) {
    throw errors.badRequest(
      `error decoding YAML: json: cannot unmarshal ${doc === undefined ? 'null' : goJsonType(doc)} into Go value of type map[string]interface {}`,
    );
  }
  return doc as Json;
}

const patchTypes = new Map<string, PatchType>([
  ['application/json-patch+json', 'json'],
  ['application/merge-patch+json', 'merge'],
  ['application/strategic-merge-patch+json', 'strategic'],
  ['application/apply-patch+yaml', 'apply'],
]);

export function patchTypeFromContentType(contentType: string | undefined): PatchType {
  const mediaType = (contentType ?? '').split(';')[0]?.trim().toLowerCase() ?? '';
  const type = patchTypes.get(mediaType);
  if (type === undefined) throw errors.unsupportedMediaType(contentType ?? '');
  return type;
}
