/** Reading a Prometheus text page: every series by `name{labels}`, and sums over series by label. */

/** A Prometheus text page as `name{labels}` → value. */
export function parseMetrics(text: string): Map<string, number> {
  const out = new Map<string, number>();
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    const at = line.lastIndexOf(' ');
    out.set(line.slice(0, at), Number(line.slice(at + 1)));
  }
  return out;
}

/** The sum of a metric's series whose labels include every `name="value"` given. */
export function sumOf(m: Map<string, number>, name: string, labels: string[] = []): number {
  let n = 0;
  for (const [k, v] of m) if (k.startsWith(`${name}{`) && labels.every((l) => k.includes(l))) n += v;
  return n;
}
