/** Value helpers the store's writes share: Kubernetes' timestamps (whole seconds) and JSON equality. */

/** Timestamps as the apiserver serialises them: RFC 3339, whole seconds. */
export function timestamp(ms: number): string {
  return new Date(ms).toISOString().replace(/\.\d{3}Z$/, 'Z');
}

export function sameJson(a: unknown, b: unknown): boolean {
  return JSON.stringify(a) === JSON.stringify(b);
}
