/**
 * Paths into a JSON request body, and copies of it with one path set or removed: for tests that take a
 * valid body and change one field at any depth (inside lifecycles, array entries, maps), e.g. to check
 * that a field CC sends as `null` means the same as the field left out.
 *
 * A path is the list of keys and array indexes from the root, as zod reports an issue's path; the
 * helpers never change their input (each returns a deep copy), and they treat every key as plain data:
 * `__proto__`, `constructor` and the like are own properties here, as JSON.parse makes them.
 */

export type JsonPath = readonly (string | number)[];

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function own(o: object, key: string | number): boolean {
  return Object.prototype.hasOwnProperty.call(o, key);
}

/** The child at `key`, only an own one (a plain `o[key]` would read `__proto__` from the prototype). */
function child(parent: unknown, key: string | number): unknown {
  if (Array.isArray(parent)) return typeof key === 'number' ? parent[key] : undefined;
  if (isObject(parent) && typeof key === 'string' && own(parent, key)) return parent[key];
  return undefined;
}

/**
 * Every path to an object property, at any depth (through objects and arrays), a parent before its
 * children. Array elements themselves are not listed (`items.0`), their properties are (`items.0.name`);
 * with `elements: true` they are listed as well.
 */
export function pathsOf(value: unknown, options: { elements?: boolean } = {}): JsonPath[] {
  const out: JsonPath[] = [];
  const walk = (v: unknown, at: (string | number)[]): void => {
    if (Array.isArray(v)) {
      v.forEach((item, i) => {
        if (options.elements) out.push([...at, i]);
        walk(item, [...at, i]);
      });
    } else if (isObject(v)) {
      for (const key of Object.keys(v)) {
        out.push([...at, key]);
        walk(v[key], [...at, key]);
      }
    }
  };
  walk(value, []);
  return out;
}

/** Whether `path` leads to a value (own properties and array indexes only). */
export function hasPath(value: unknown, path: JsonPath): boolean {
  let at: unknown = value;
  for (const key of path) {
    if (Array.isArray(at)) {
      if (typeof key !== 'number' || key < 0 || key >= at.length) return false;
    } else if (!isObject(at) || typeof key !== 'string' || !own(at, key)) {
      return false;
    }
    at = child(at, key);
  }
  return true;
}

/** The value at `path`, or undefined when there is none. */
export function getPath(value: unknown, path: JsonPath): unknown {
  let at: unknown = value;
  for (const key of path) at = child(at, key);
  return at;
}

/** The container `path` ends in, inside `copy`; throws when the path does not exist. */
function parentIn(copy: unknown, path: JsonPath): { parent: unknown; key: string | number } {
  if (path.length === 0) throw new Error('the empty path has no parent');
  if (!hasPath(copy, path.slice(0, -1))) throw new Error(`no such path: ${formatPath(path.slice(0, -1))}`);
  return { parent: getPath(copy, path.slice(0, -1)), key: path[path.length - 1] as string | number };
}

/**
 * A deep copy of `value` with `replacement` (its own copy too) at `path`. The parent must exist; the key
 * itself need not (it is added).
 */
export function setPath<T>(value: T, path: JsonPath, replacement: unknown): T {
  if (path.length === 0) return structuredClone(replacement) as T;
  const copy = structuredClone(value);
  const { parent, key } = parentIn(copy, path);
  const placed = structuredClone(replacement);
  if (Array.isArray(parent) && typeof key === 'number') parent[key] = placed;
  else if (isObject(parent) && typeof key === 'string') {
    // defineProperty: an assignment to `__proto__` would set the prototype, not a property.
    Object.defineProperty(parent, key, {
      value: placed,
      enumerable: true,
      writable: true,
      configurable: true,
    });
  } else throw new Error(`cannot set ${formatPath(path)}: its parent is not an object or array`);
  return copy;
}

/** A deep copy of `value` without `path` (a property removed; an array element spliced out). */
export function deletePath<T>(value: T, path: JsonPath): T {
  const copy = structuredClone(value);
  const { parent, key } = parentIn(copy, path);
  if (Array.isArray(parent) && typeof key === 'number') parent.splice(key, 1);
  else if (isObject(parent) && typeof key === 'string') Reflect.deleteProperty(parent, key);
  else throw new Error(`cannot delete ${formatPath(path)}: its parent is not an object or array`);
  return copy;
}

/** A path as zod's issues name it in this service's messages (describeIssues): keys joined by '.'. */
export function formatPath(path: JsonPath): string {
  return path.map(String).join('.');
}
