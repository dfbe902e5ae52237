/**
 * Loggregator v2 envelopes as the service builds them (`proto/loggregator-api/v2/envelope.proto`): a log
 * line or a gauge, named by `sourceId` and `instanceId`, with string tags. Timestamps are Unix
 * nanoseconds as a bigint, so the container runtime's own nanoseconds reach Log Cache unrounded.
 */

export type LogStream = 'OUT' | 'ERR';

export interface GaugeValue {
  unit: string;
  value: number;
}

interface EnvelopeBase {
  timestampNs: bigint;
  sourceId: string;
  instanceId: string;
  tags: Record<string, string>;
}

export interface LogEnvelope extends EnvelopeBase {
  log: { payload: Buffer; type: LogStream };
}

export interface GaugeEnvelope extends EnvelopeBase {
  gauge: Record<string, GaugeValue>;
}

export type Envelope = LogEnvelope | GaugeEnvelope;

/** What the sender counts envelopes by (`opi_loggregator_envelopes_sent_total{kind}`). */
export type EnvelopeKind = 'log' | 'gauge';

export function kindOf(e: Envelope): EnvelopeKind {
  return 'log' in e ? 'log' : 'gauge';
}

/** The object proto-loader encodes (field names as in the proto, int64 as a decimal string). */
export interface WireEnvelope {
  timestamp: string;
  source_id: string;
  instance_id: string;
  tags: Record<string, string>;
  log?: { payload: Buffer; type: LogStream };
  gauge?: { metrics: Record<string, GaugeValue> };
}

export function toWire(e: Envelope): WireEnvelope {
  const wire: WireEnvelope = {
    timestamp: e.timestampNs.toString(),
    source_id: e.sourceId,
    instance_id: e.instanceId,
    tags: e.tags,
  };
  if ('log' in e) wire.log = e.log;
  else wire.gauge = { metrics: e.gauge };
  return wire;
}
