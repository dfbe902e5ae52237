/**
 * Desires the cluster refused for good, one key per LRP beside its record (`keys.refusal`): written by
 * the worker whose converge was refused, cleared by the next converge of that LRP that succeeds, read by
 * `/instances` with the record (decision 7). The value is `<generation> <JSON>`: the scripts compare the
 * generation without decoding the JSON (cjson refuses a lone surrogate that JSON.stringify writes).
 *
 * Out of order and twice are safe: a refusal never replaces one of a newer generation, a success clears
 * only refusals of its generation or older, and a reader shows a refusal only while the record still has
 * its generation, so an update or a new desire hides the old refusal at once.
 */
export interface DesireRefusal {
  /** The record's generation whose converge was refused. */
  generation: number;
  /** What it was counted as (`opi_desire_refused_total{reason}`). */
  reason: string;
  /** What CC shows: every desired instance's `placement_error`. */
  message: string;
}

/**
 * Sets the refusal unless one of a newer generation is stored. KEYS: refusal. ARGV: generation, value.
 * Answers 1 when written.
 */
export const RECORD_REFUSAL = `
local cur = redis.call('GET', KEYS[1])
if cur then
  local g = tonumber(string.match(cur, '^(%d+) '))
  if g and g > tonumber(ARGV[1]) then return 0 end
end
redis.call('SET', KEYS[1], ARGV[2])
return 1
`;

/** Deletes the refusal if it is of this generation or older. KEYS: refusal. ARGV: generation. */
export const CLEAR_REFUSAL = `
local cur = redis.call('GET', KEYS[1])
if not cur then return 0 end
local g = tonumber(string.match(cur, '^(%d+) '))
if g and g > tonumber(ARGV[1]) then return 0 end
redis.call('DEL', KEYS[1])
return 1
`;

export function refusalValue(r: DesireRefusal): string {
  return `${r.generation} ${JSON.stringify({ reason: r.reason, message: r.message })}`;
}

/** The stored refusal, or undefined for none or a value this version cannot read. */
export function parseRefusal(value: string | null | undefined): DesireRefusal | undefined {
  if (!value) return undefined;
  const space = value.indexOf(' ');
  const generation = Number(value.slice(0, space));
  if (space < 1 || !Number.isSafeInteger(generation)) return undefined;
  try {
    const { reason, message } = JSON.parse(value.slice(space + 1)) as Partial<DesireRefusal>;
    if (typeof reason !== 'string' || typeof message !== 'string') return undefined;
    return { generation, reason, message };
  } catch {
    return undefined;
  }
}
