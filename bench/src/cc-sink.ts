/**
 * CC's side of the callbacks, for the freshness figures: an HTTP server on loopback that answers 200 to
 * every POST (crash reports at CC_INTERNAL_URL, task completion callbacks) and notes when each arrived on
 * the bench's clock, so a test can wait for one and time it.
 */
import { type IncomingMessage, type ServerResponse, createServer } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';

export interface Arrival {
  path: string;
  body: unknown;
  /** performance.now() when the request's body was read. */
  at: number;
}

export interface CcSink {
  readonly url: string;
  /** Resolves with the first arrival (from now on, or already here) that `match` accepts. */
  next(match: (a: Arrival) => boolean, timeoutMs: number): Promise<Arrival>;
  readonly received: number;
  close(): Promise<void>;
}

export async function startCcSink(): Promise<CcSink> {
  const arrivals: Arrival[] = [];
  const waiters = new Set<{ match: (a: Arrival) => boolean; resolve: (a: Arrival) => void }>();
  const sockets = new Set<Socket>();
  const server = createServer({ noDelay: true }, (req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const at = performance.now();
      let body: unknown;
      try {
        body = JSON.parse(Buffer.concat(chunks).toString('utf8'));
      } catch {
        body = undefined;
      }
      const arrival: Arrival = { path: new URL(req.url ?? '/', 'http://cc').pathname, body, at };
      arrivals.push(arrival);
      for (const w of waiters) {
        if (w.match(arrival)) {
          waiters.delete(w);
          w.resolve(arrival);
        }
      }
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end('{}');
    });
  });
  server.on('connection', (s: Socket) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    url,
    get received() {
      return arrivals.length;
    },
    next: (match, timeoutMs) => {
      const here = arrivals.find(match);
      if (here) return Promise.resolve(here);
      return new Promise<Arrival>((resolve, reject) => {
        const w = {
          match,
          resolve: (a: Arrival) => {
            clearTimeout(timer);
            resolve(a);
          },
        };
        const timer = setTimeout(() => {
          waiters.delete(w);
          reject(new Error(`no matching callback within ${timeoutMs} ms`));
        }, timeoutMs);
        waiters.add(w);
      });
    },
    close: async () => {
      const closed = new Promise<void>((resolve) => {
        server.close(() => {
          resolve();
        });
      });
      for (const s of sockets) s.destroy();
      await closed;
    },
  };
}
