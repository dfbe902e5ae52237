/**
 * A Loggregator v2 ingress in the test: a grpc-js server over the vendored protos with mutual TLS, serving
 * `BatchSender` (and `Sender`) as an agent does and `Send` as doppler does (Unimplemented). It keeps every
 * envelope it decoded, and can cut the streams it holds or go away and come back on the same port.
 */
import {
  Server,
  ServerCredentials,
  type ServerReadableStream,
  type UntypedServiceImplementation,
  status,
} from '@grpc/grpc-js';
import { ingressClientClass } from '@opi/loggregator';
import type { Pki } from './pki.js';

/** An envelope as decoded (proto field names; int64 as a decimal string; bytes as a Buffer). */
export interface ReceivedEnvelope {
  timestamp: string;
  source_id: string;
  instance_id: string;
  tags?: Record<string, string>;
  log?: { payload: Buffer; type?: 'OUT' | 'ERR' };
  gauge?: { metrics: Record<string, { unit: string; value: number }> };
  message?: string;
}

export interface FakeIngress {
  port: number;
  received: ReceivedEnvelope[];
  /** Streams opened so far (a reconnect opens one more). */
  streamsOpened: number;
  /** Ends every open stream with UNAVAILABLE, as an agent restarting would. */
  cutStreams(): void;
  /** Stops listening (streams cut); `start` listens again on the same port. */
  stop(): Promise<void>;
  start(): Promise<void>;
}

export async function startFakeIngress(pki: Pki, port = 0): Promise<FakeIngress> {
  const received: ReceivedEnvelope[] = [];
  // Each open stream's way to end it with a status (a client-streaming call ends by its callback).
  const open = new Set<(e: { code: number; details: string } | null) => void>();
  let server: Server | undefined;
  let streamsOpened = 0;
  const creds = ServerCredentials.createSsl(
    pki.ca,
    [{ cert_chain: pki.read('server.crt'), private_key: pki.read('server.key') }],
    true,
  );
  type Done = (e: { code: number; details: string } | null, r?: object) => void;
  const keep = (call: ServerReadableStream<unknown, object>, cb: Done, each: (m: unknown) => void): void => {
    streamsOpened++;
    let ended = false;
    const finish = (e: { code: number; details: string } | null): void => {
      if (ended) return;
      ended = true;
      open.delete(finish);
      cb(e, {});
    };
    open.add(finish);
    call.on('data', each);
    call.on('end', () => {
      finish(null);
    });
    call.on('error', () => open.delete(finish));
    call.on('cancelled', () => open.delete(finish));
  };
  const impl: UntypedServiceImplementation = {
    BatchSender(call: ServerReadableStream<unknown, object>, cb: Done) {
      keep(call, cb, (m) => received.push(...((m as { batch?: ReceivedEnvelope[] }).batch ?? [])));
    },
    Sender(call: ServerReadableStream<unknown, object>, cb: Done) {
      keep(call, cb, (m) => received.push(m as ReceivedEnvelope));
    },
    Send(_call: unknown, cb: Done) {
      cb({ code: status.UNIMPLEMENTED, details: 'doppler serves BatchSender and Sender only' });
    },
  };
  const fake: FakeIngress = {
    port,
    received,
    get streamsOpened() {
      return streamsOpened;
    },
    cutStreams() {
      for (const finish of [...open]) finish({ code: status.UNAVAILABLE, details: 'cut by the test' });
    },
    async start() {
      const s = new Server();
      server = s;
      s.addService(ingressClientClass().service, impl);
      fake.port = await new Promise<number>((resolve, reject) => {
        s.bindAsync(`127.0.0.1:${fake.port}`, creds, (e, p) => {
          if (e) reject(e);
          else resolve(p);
        });
      });
    },
    async stop() {
      const s = server;
      server = undefined;
      open.clear();
      if (s) s.forceShutdown();
      await Promise.resolve();
    },
  };
  await fake.start();
  return fake;
}
