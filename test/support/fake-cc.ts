/**
 * A stand-in for CC's internal API: a real HTTP(S) server that records every callback and can be made to
 * fail at run time (down, canned statuses, slowness), so callback delivery is tested over real sockets.
 * Every callback is checked against CC's own rules (cc-rules.ts): a body CC would refuse is answered as
 * CC answers it, and any body CC would refuse or fail to store fails the test that was running when it
 * came (an afterEach hook, registered for each test file that imports this module).
 */
import { afterEach } from '@jest/globals';
import {
  type IncomingHttpHeaders,
  type IncomingMessage,
  type Server,
  type ServerResponse,
  createServer as createHttpServer,
} from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import type { AddressInfo, Socket } from 'node:net';
import type { TLSSocket } from 'node:tls';
import { type CcVerdict, checkCallback } from './cc-rules.js';

export interface FakeCcTls {
  cert: string | Buffer;
  key: string | Buffer;
  /** CA(s) that client certificates must chain to. */
  ca: string | Buffer;
  /** Refuse clients without a valid certificate during the handshake, as CC's mTLS listener does. */
  requireClientCert?: boolean;
}

export interface FakeCcOptions {
  tls?: FakeCcTls;
  /** Answer 400 to a second completion of the same task or staging, as CC does. */
  rejectRepeats?: boolean;
  delayMs?: number;
}

export interface RecordedCall {
  method: string;
  path: string;
  query: Record<string, string>;
  headers: IncomingHttpHeaders;
  /** Parsed JSON; undefined when the body was empty or not JSON. */
  body: unknown;
  rawBody: string;
  /** Whether the client presented a certificate (https only). */
  clientCert: boolean;
  clientCertSubject?: string;
  /** The client's port: equal ports on two calls mean a reused keep-alive connection. */
  remotePort: number;
  /** The status the fake answered with; undefined while delayed or when the connection went first. */
  status?: number;
  /** When it was answered (ms since the epoch); undefined while it was not. */
  answeredAt?: number;
  /** CC's verdict on a callback body (cc-rules.ts); undefined for other paths. */
  cc?: CcVerdict;
}

/** Callbacks CC would have refused or failed to store, not yet failed a test. */
const breaches: string[] = [];

afterEach(() => {
  if (breaches.length === 0) return;
  const found = breaches.splice(0);
  throw new Error(`CC would refuse or fail to store ${found.length} callback(s):\n${found.join('\n')}`);
});

export interface CannedAnswer {
  status: number;
  body?: unknown;
  headers?: Record<string, string>;
}

export interface FakeCc {
  /** `http(s)://127.0.0.1:<port>`; the same across down()/up(). */
  readonly url: string;
  /** Every request received, in order; the array is live (reset() empties it in place). */
  readonly calls: RecordedCall[];
  callsTo(pathPrefix: string): RecordedCall[];
  /** Closes the listening socket and every open connection: clients get ECONNREFUSED. */
  down(): Promise<void>;
  /** Listens again on the same port. */
  up(): Promise<void>;
  /** Answer every request with this status (and optional body/headers); no status: back to normal. */
  answer(status?: number, extra?: Omit<CannedAnswer, 'status'>): void;
  /** Like answer(), for paths starting with the prefix; takes precedence, longest prefix wins. */
  answerFor(pathPrefix: string, status?: number, extra?: Omit<CannedAnswer, 'status'>): void;
  /** Wait this long before answering (read at each request). */
  delayMs: number;
  rejectRepeats: boolean;
  /** TLS handshakes the fake refused (e.g. no or untrusted client certificate). */
  readonly refusedHandshakes: number;
  /** Forgets calls, canned answers, completions seen and refusals; the delay goes back to the option. */
  reset(): void;
  close(): Promise<void>;
}

const HOST = '127.0.0.1';

/**
 * What identifies "the same completion" for rejectRepeats: the task guid in a task completion body, else
 * the path of a staging `build_completed`. Crash reports are never repeats: CC takes one per crash.
 */
function completionKey(path: string, body: unknown): string | undefined {
  if (
    typeof body === 'object' &&
    body !== null &&
    'task_guid' in body &&
    typeof body.task_guid === 'string'
  ) {
    return `task:${body.task_guid}`;
  }
  if (path.endsWith('/build_completed')) return `staging:${path}`;
  return undefined;
}

function peerCertificate(req: IncomingMessage): { present: boolean; subject?: string } {
  const socket = req.socket as Partial<TLSSocket>;
  if (typeof socket.getPeerCertificate !== 'function') return { present: false };
  const cert = socket.getPeerCertificate();
  // Node returns {} when the peer sent no certificate.
  if (Object.keys(cert).length === 0) return { present: false };
  const cn = cert.subject.CN;
  return { present: true, ...(typeof cn === 'string' && { subject: cn }) };
}

function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      resolve(Buffer.concat(chunks).toString('utf8'));
    });
    req.on('error', reject);
  });
}

export async function startFakeCc(opts: FakeCcOptions = {}): Promise<FakeCc> {
  const calls: RecordedCall[] = [];
  const prefixAnswers = new Map<string, CannedAnswer>();
  let allAnswer: CannedAnswer | undefined;
  const completed = new Set<string>();
  const sockets = new Set<Socket>();
  const timers = new Set<NodeJS.Timeout>();
  let refusedHandshakes = 0;
  let listening = false;
  let closed = false;

  const pick = (path: string): CannedAnswer | undefined => {
    let best: [string, CannedAnswer] | undefined;
    for (const entry of prefixAnswers) {
      if (path.startsWith(entry[0]) && (best === undefined || entry[0].length > best[0].length)) best = entry;
    }
    return best?.[1] ?? allAnswer;
  };

  const sleep = (ms: number) =>
    new Promise<void>((resolve) => {
      // Tracked so close() can cancel it; the abandoned handler then simply never resumes.
      const t = setTimeout(() => {
        timers.delete(t);
        resolve();
      }, ms);
      timers.add(t);
    });

  const handle = async (req: IncomingMessage, res: ServerResponse) => {
    const rawBody = await readBody(req);
    const url = new URL(req.url ?? '/', 'http://fake-cc');
    let body: unknown;
    try {
      body = rawBody === '' ? undefined : JSON.parse(rawBody);
    } catch {
      body = undefined;
    }
    const cert = peerCertificate(req);
    const call: RecordedCall = {
      method: req.method ?? '',
      path: url.pathname,
      query: Object.fromEntries(url.searchParams),
      headers: req.headers,
      body,
      rawBody,
      clientCert: cert.present,
      ...(cert.subject !== undefined && { clientCertSubject: cert.subject }),
      remotePort: req.socket.remotePort ?? 0,
    };
    const verdict = checkCallback(call.method, call.path, rawBody);
    if (verdict) {
      call.cc = verdict;
      for (const p of verdict.problems)
        breaches.push(`${call.method} ${call.path}: ${p}\n  body: ${rawBody.slice(0, 300)}`);
    }
    calls.push(call);

    if (fake.delayMs > 0) await sleep(fake.delayMs);
    if (res.destroyed || res.writableEnded) return;

    const key = req.method === 'POST' ? completionKey(url.pathname, body) : undefined;
    let answer = pick(url.pathname);
    if (answer === undefined && fake.rejectRepeats && key !== undefined && completed.has(key)) {
      answer = {
        status: 400,
        body: {
          code: 10004,
          error_code: 'CF-InvalidRequest',
          description: 'The request is invalid: already finished',
        },
      };
    }
    if (answer === undefined && verdict && verdict.status !== 200) {
      answer = {
        status: verdict.status,
        body: { error_code: 'CF-InvalidRequest', description: verdict.problems.join('; ') },
      };
    }
    answer ??= { status: 200, body: {} };
    // CC only remembers completions it accepted.
    if (key !== undefined && answer.status >= 200 && answer.status < 300) completed.add(key);

    call.status = answer.status;
    call.answeredAt = Date.now();
    const payload = answer.body === undefined ? '' : JSON.stringify(answer.body);
    res.writeHead(answer.status, {
      ...(payload !== '' && { 'content-type': 'application/json' }),
      ...answer.headers,
    });
    res.end(payload);
  };

  const onRequest = (req: IncomingMessage, res: ServerResponse) => {
    handle(req, res).catch(() => {
      res.destroy();
    });
  };

  const tls = opts.tls;
  const server: Server =
    tls === undefined
      ? createHttpServer(onRequest)
      : createHttpsServer(
          {
            cert: tls.cert,
            key: tls.key,
            ca: tls.ca,
            requestCert: true,
            rejectUnauthorized: tls.requireClientCert ?? true,
          },
          onRequest,
        );
  // Raw TCP sockets, including ones still in a TLS handshake, which closeAllConnections() would miss.
  // A connection the kernel accepted just before down() is handed over after it: refused too, so nothing
  // is taken once down() has begun.
  server.on('connection', (s: Socket) => {
    if (!listening) {
      s.destroy();
      return;
    }
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  server.on('tlsClientError', () => {
    refusedHandshakes += 1;
  });

  let port = 0;
  const listen = () =>
    new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(port, HOST, () => {
        server.off('error', reject);
        port = (server.address() as AddressInfo).port;
        listening = true;
        resolve();
      });
    });

  const down = async () => {
    if (!listening) return;
    listening = false;
    const stopped = new Promise<void>((resolve) => {
      server.close(() => {
        resolve();
      });
    });
    for (const s of sockets) s.destroy();
    await stopped;
  };

  await listen();

  const fake: FakeCc = {
    url: `${tls === undefined ? 'http' : 'https'}://${HOST}:${port}`,
    calls,
    callsTo: (prefix) => calls.filter((c) => c.path.startsWith(prefix)),
    down,
    up: async () => {
      if (closed) throw new Error('fake CC is closed');
      if (!listening) await listen();
    },
    answer: (status, extra) => {
      allAnswer = status === undefined ? undefined : { status, ...extra };
    },
    answerFor: (prefix, status, extra) => {
      if (status === undefined) prefixAnswers.delete(prefix);
      else prefixAnswers.set(prefix, { status, ...extra });
    },
    delayMs: opts.delayMs ?? 0,
    rejectRepeats: opts.rejectRepeats ?? false,
    get refusedHandshakes() {
      return refusedHandshakes;
    },
    reset: () => {
      calls.length = 0;
      prefixAnswers.clear();
      allAnswer = undefined;
      completed.clear();
      fake.delayMs = opts.delayMs ?? 0;
      refusedHandshakes = 0;
    },
    close: async () => {
      closed = true;
      for (const t of timers) clearTimeout(t);
      timers.clear();
      await down();
    },
  };
  return fake;
}
