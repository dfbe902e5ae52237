/**
 * Stable hashes for pod templates: `pod-template-hash` and `controller-revision-hash` look like upstream's
 * (FNV-32a, its decimal form mapped through apimachinery's SafeEncodeString alphabet, e.g. `7c5ddbdf54`).
 */

const SAFE_ALPHABET = 'bcdfghjklmnpqrstvwxz2456789';

/** JSON with object keys sorted, so equal values always hash alike. */
export function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map((v) => canonicalJson(v)).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>)
      .filter(([, v]) => v !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonicalJson(v)}`).join(',')}}`;
  }
  return JSON.stringify(value) ?? 'null';
}

export function fnv32a(text: string): number {
  let h = 0x811c9dc5;
  const bytes = Buffer.from(text, 'utf8');
  for (const b of bytes) {
    h ^= b;
    h = Math.imul(h, 0x01000193) >>> 0;
  }
  return h >>> 0;
}

/** rand.SafeEncodeString of the hash's decimal digits, padded to 10 so every hash has the same length. */
export function safeEncode(n: number): string {
  let out = '';
  for (const ch of String(n).padStart(10, '0'))
    out += SAFE_ALPHABET.charAt(ch.charCodeAt(0) % SAFE_ALPHABET.length);
  return out;
}

/** Hash of a pod template, ignoring its `pod-template-hash` label; collisionCount varies it as upstream. */
export function templateHash(template: unknown, collisionCount = 0): string {
  const text = canonicalJson(withoutHashLabel(template));
  return safeEncode(fnv32a(collisionCount ? `${text}${collisionCount}` : text));
}

export const POD_TEMPLATE_HASH = 'pod-template-hash';

export function withoutHashLabel(template: unknown): unknown {
  if (template === null || typeof template !== 'object') return template;
  const t = template as { metadata?: { labels?: Record<string, string> } };
  const labels = t.metadata?.labels;
  if (!labels || !(POD_TEMPLATE_HASH in labels)) return template;
  const rest = Object.fromEntries(Object.entries(labels).filter(([k]) => k !== POD_TEMPLATE_HASH));
  return { ...t, metadata: { ...t.metadata, labels: rest } };
}

/** deploymentutil.EqualIgnoreHash: two templates equal but for their pod-template-hash labels. */
export function equalIgnoringHash(a: unknown, b: unknown): boolean {
  return canonicalJson(withoutHashLabel(a)) === canonicalJson(withoutHashLabel(b));
}
