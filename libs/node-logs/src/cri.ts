/**
 * The CRI log format the kubelet's runtime writes (`<RFC3339Nano> <stdout|stderr> <F|P> <text>`): a
 * record per line, a long line split into partial (P) records ended by a full (F) one.
 */

export type CriStream = 'stdout' | 'stderr';

export interface CriRecord {
  timeNs: bigint;
  stream: CriStream;
  partial: boolean;
  text: string;
}

const RECORD =
  /^(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2})(?:\.(\d{1,9}))?(Z|[+-]\d{2}:\d{2}) (stdout|stderr) ([FP])(?:\S*) ?(.*)$/s;

/** One record, or undefined for a line that is not one (left out, counted by the caller). */
export function parseCriRecord(line: string): CriRecord | undefined {
  const m = RECORD.exec(line);
  if (!m) return undefined;
  const ms = Date.parse(`${m[1] ?? ''}${m[3] ?? ''}`);
  if (Number.isNaN(ms)) return undefined;
  return {
    timeNs: BigInt(ms) * 1_000_000n + BigInt((m[2] ?? '').padEnd(9, '0')),
    stream: m[4] as CriStream,
    partial: m[5] === 'P',
    text: m[6] ?? '',
  };
}

/** A whole line: the partial records' texts joined, stamped with the first record's time. */
export interface LogRecord {
  timeNs: bigint;
  stream: CriStream;
  text: string;
}

/**
 * Joins partial records per stream into whole lines, as the kubelet does for pods/log. A line held longer
 * than `maxBytes` is cut there and let out, so a writer that never ends its line cannot grow it unbounded.
 */
export class CriJoiner {
  private readonly pending = new Map<CriStream, { timeNs: bigint; parts: string[]; bytes: number }>();

  constructor(private readonly maxBytes = 64 * 1024) {}

  /** The whole line this record completes, if any. */
  push(r: CriRecord): LogRecord | undefined {
    const held = this.pending.get(r.stream);
    if (!r.partial) {
      if (!held) return { timeNs: r.timeNs, stream: r.stream, text: r.text };
      this.pending.delete(r.stream);
      return { timeNs: held.timeNs, stream: r.stream, text: held.parts.join('') + r.text };
    }
    const next = held ?? { timeNs: r.timeNs, parts: [], bytes: 0 };
    next.parts.push(r.text);
    next.bytes += r.text.length;
    if (next.bytes < this.maxBytes) {
      this.pending.set(r.stream, next);
      return undefined;
    }
    this.pending.delete(r.stream);
    return { timeNs: next.timeNs, stream: r.stream, text: next.parts.join('') };
  }
}
