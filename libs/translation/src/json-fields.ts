/**
 * Checks for JSON read back from the cluster (annotations anyone with edit rights can change): each
 * says whether a parsed value has the shape the domain needs, so a reader builds its result field by
 * field from checked values only.
 */

export type Fields = Record<string, unknown>;

export function isRecord(value: unknown): value is Fields {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

export const isString = (v: unknown): v is string => typeof v === 'string';
export const isCount = (v: unknown): v is number => Number.isSafeInteger(v) && (v as number) >= 0;
export const isInteger = (v: unknown): v is number => Number.isSafeInteger(v);
export const isPort = (v: unknown): v is number => isCount(v) && v <= 65535;

/** An array whose every item passes `check`, else undefined. */
export function arrayOf<T>(value: unknown, check: (v: unknown) => v is T): T[] | undefined {
  return Array.isArray(value) && value.every(check) ? value : undefined;
}

/** True when the object has no key outside `allowed`. */
export function onlyKeys(value: Fields, allowed: readonly string[]): boolean {
  return Object.keys(value).every((k) => allowed.includes(k));
}

export function stringMap(value: unknown): Record<string, string> | undefined {
  if (!isRecord(value)) return undefined;
  const entries = Object.entries(value);
  return entries.every(([, v]) => isString(v))
    ? Object.fromEntries(entries as [string, string][])
    : undefined;
}
