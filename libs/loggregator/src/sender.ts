/**
 * Loggregator v2 out, as go-loggregator's ingress client does it: one long-lived client-streaming
 * `BatchSender` call (doppler has no unary `Send`), flushed at `batchSize` envelopes or every
 * `flushIntervalMs`, opened again with backoff after any error. Envelopes wait in a bounded queue that
 * drops its oldest while Loggregator is away, so memory stays bounded and the drops are counted.
 */
import {
  type Client,
  type ClientWritableStream,
  type ServiceError,
  connectivityState as Connectivity,
  credentials,
  status as GrpcStatus,
} from '@grpc/grpc-js';
import { BoundedQueue } from './bounded-queue.js';
import { type Envelope, type EnvelopeKind, type WireEnvelope, kindOf, toWire } from './envelope.js';
import { ingressClientClass } from './proto.js';

/** Where the stream stands: `connecting` until the first connection, `down` while backing off. */
export type SenderState = 'connecting' | 'connected' | 'down';

/** What the sender reports, for metrics and logs; every hook is optional. */
export interface SenderObserver {
  sent?(kind: EnvelopeKind, count: number): void;
  dropped?(count: number): void;
  state?(state: SenderState, reason?: string): void;
}

export interface SenderOptions {
  /** `host:port` of a Loggregator agent's v2 ingress (127.0.0.1:3458) or doppler (:8082). */
  address: string;
  /** PEM CA bundle, client certificate and key: Loggregator's ingress wants mutual TLS. */
  tls: { ca?: Buffer; cert?: Buffer; key?: Buffer };
  /** The name the server's certificate is checked against (`metron` for agents, as go-loggregator). */
  serverName?: string;
  /** Envelopes held while the stream is down or slow; beyond it the oldest are dropped. */
  maxBuffered?: number;
  batchSize?: number;
  flushIntervalMs?: number;
  backoff?: { initialMs: number; maxMs: number };
  observer?: SenderObserver;
}

const DEFAULTS = {
  serverName: 'metron',
  maxBuffered: 10_000,
  batchSize: 100,
  flushIntervalMs: 100,
  backoff: { initialMs: 500, maxMs: 30_000 },
};

// A Go gRPC server sends GOAWAY to a client that pings more often than every 5 minutes (its default
// enforcement policy), so keepalive stays at that: it still finds a connection that died half-open.
// Reconnect pacing is the sender's own backoff; the channel's is capped to match it.
const CHANNEL_OPTIONS = {
  'grpc.keepalive_time_ms': 300_000,
  'grpc.keepalive_timeout_ms': 20_000,
  'grpc.initial_reconnect_backoff_ms': 500,
  'grpc.max_reconnect_backoff_ms': 30_000,
};

/** The generated client's one method used here. */
type IngressClient = Client & {
  BatchSender(done: (e: ServiceError | null) => void): ClientWritableStream<{ batch: WireEnvelope[] }>;
};

export class LoggregatorSender {
  private readonly queue: BoundedQueue<Envelope>;
  private readonly client: IngressClient;
  private readonly opts: typeof DEFAULTS & SenderOptions;
  private stream: ClientWritableStream<{ batch: WireEnvelope[] }> | undefined;
  private streamState: SenderState = 'connecting';
  private awaitingDrain = false;
  private closed = false;
  private failures = 0;
  private flushTimer: NodeJS.Timeout | undefined;
  private retryTimer: NodeJS.Timeout | undefined;
  private lastError: string | undefined;

  constructor(options: SenderOptions) {
    this.opts = { ...DEFAULTS, ...options };
    this.queue = new BoundedQueue(this.opts.maxBuffered);
    const creds = credentials.createSsl(
      options.tls.ca ?? null,
      options.tls.key ?? null,
      options.tls.cert ?? null,
    );
    const Ingress = ingressClientClass();
    this.client = new Ingress(options.address, creds, {
      ...CHANNEL_OPTIONS,
      'grpc.ssl_target_name_override': this.opts.serverName,
      'grpc.default_authority': this.opts.serverName,
    }) as unknown as IngressClient;
    this.open();
    this.flushTimer = setInterval(() => {
      this.flush();
    }, this.opts.flushIntervalMs);
    this.flushTimer.unref();
  }

  get state(): SenderState {
    return this.streamState;
  }

  /** The last reason the stream failed, while it is down (for /readyz). */
  get downReason(): string | undefined {
    return this.streamState === 'down' ? this.lastError : undefined;
  }

  /** Envelopes waiting to be written. */
  get buffered(): number {
    return this.queue.length;
  }

  /** Queues an envelope; it leaves with the next batch. Never blocks, never throws. */
  send(envelope: Envelope): void {
    if (this.closed) return;
    const dropped = this.queue.push(envelope);
    if (dropped > 0) this.opts.observer?.dropped?.(dropped);
    if (this.queue.length >= this.opts.batchSize) this.flush();
  }

  /**
   * Writes what is queued (for up to `timeoutMs`), then ends the stream and closes the channel. What is
   * still queued after that is dropped and counted.
   */
  async close(timeoutMs = 2_000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (this.queue.length > 0 && Date.now() < deadline && this.streamState === 'connected') {
      this.flush();
      await new Promise((r) => setTimeout(r, 10));
    }
    this.closed = true;
    clearInterval(this.flushTimer);
    clearTimeout(this.retryTimer);
    const left = this.queue.take(this.queue.length).length;
    if (left > 0) this.opts.observer?.dropped?.(left);
    const stream = this.stream;
    this.stream = undefined;
    stream?.end();
    this.client.close();
  }

  private setState(state: SenderState, reason?: string): void {
    if (state === this.streamState && state !== 'down') return;
    this.streamState = state;
    this.opts.observer?.state?.(state, reason);
  }

  private open(): void {
    if (this.closed) return;
    // A client stream opened on a channel that cannot connect fails only at its first write, so the
    // stream is opened once the channel is ready; a failed connection attempt (refused, TLS) is "down".
    this.whenReady((err) => {
      if (this.closed) return;
      if (err) {
        this.failed(err);
        return;
      }
      const stream = this.client.BatchSender((e: ServiceError | null) => {
        if (this.stream !== stream) return;
        this.stream = undefined;
        // Loggregator never ends a BatchSender call on its own: an end, even OK, means reconnect.
        this.failed(e ? `${GrpcStatus[e.code] ?? e.code}: ${e.details}` : 'stream ended by the server');
      });
      this.stream = stream;
      this.failures = 0;
      this.setState('connected');
      this.flush();
    });
  }

  /** Calls back once the channel is READY, or with why not once an attempt failed or 10 s passed. */
  private whenReady(done: (err?: string) => void): void {
    const channel = this.client.getChannel();
    const deadline = Date.now() + 10_000;
    let attempted = false;
    const step = (): void => {
      if (this.closed) return;
      const state = channel.getConnectivityState(true);
      if (state === Connectivity.READY) {
        done();
        return;
      }
      if (state === Connectivity.CONNECTING) attempted = true;
      if (state === Connectivity.TRANSIENT_FAILURE && attempted) {
        done(`cannot connect to ${this.opts.address} (refused, unreachable or TLS)`);
        return;
      }
      channel.watchConnectivityState(state, deadline, (e?: Error) => {
        if (e) done(`no connection to ${this.opts.address} within 10 s`);
        else step();
      });
    };
    step();
  }

  private failed(reason: string): void {
    this.lastError = reason;
    this.setState('down', reason);
    if (this.closed) return;
    const { initialMs, maxMs } = this.opts.backoff;
    const delay = Math.min(maxMs, initialMs * 2 ** Math.min(this.failures, 16));
    this.failures++;
    // ±20 % jitter, so workers cut off together do not all come back at once.
    const jittered = delay * (0.8 + Math.random() * 0.4);
    this.retryTimer = setTimeout(() => {
      this.open();
    }, jittered);
    this.retryTimer.unref();
  }

  private flush(): void {
    const stream = this.stream;
    while (stream && !this.awaitingDrain && this.queue.length > 0) {
      const batch = this.queue.take(this.opts.batchSize);
      const accepted = stream.write({ batch: batch.map(toWire) }, (err?: Error | null) => {
        if (!err) {
          this.countSent(batch);
          return;
        }
        // Not handed to the transport: back to the head of the queue for the next stream.
        const dropped = this.queue.unshiftAll(batch);
        if (dropped > 0) this.opts.observer?.dropped?.(dropped);
      });
      if (!accepted) {
        // The transport's buffer is full: the rest waits in the queue until it drains.
        this.awaitingDrain = true;
        stream.once('drain', () => {
          this.awaitingDrain = false;
          this.flush();
        });
      }
      // Less than a batch waits for the timer, so a trickle of lines still leaves in batches.
      if (this.queue.length < this.opts.batchSize) break;
    }
  }

  private countSent(batch: readonly Envelope[]): void {
    const observer = this.opts.observer;
    if (!observer?.sent) return;
    let logs = 0;
    for (const e of batch) if (kindOf(e) === 'log') logs++;
    if (logs > 0) observer.sent('log', logs);
    if (batch.length > logs) observer.sent('gauge', batch.length - logs);
  }
}
