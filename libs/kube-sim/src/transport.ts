/**
 * The server's transport: one listening port that speaks both plain HTTP and HTTPS, the connections it
 * holds, the bearer-token check, and the last-resort answer when a request's handler throws.
 */
import http from 'node:http';
import net, { type AddressInfo } from 'node:net';
import tls from 'node:tls';
import { StatusError, errors } from './errors.js';
import { type Res, sendError } from './http-io.js';
import { selfSignedCertificate } from './tls.js';

export type Handler = (req: http.IncomingMessage, res: Res) => Promise<void>;

export class Transport {
  readonly server: http.Server;
  private listener: net.Server | undefined;
  private tls: tls.Server | undefined;
  private readonly sockets = new Set<net.Socket>();
  /** Connections accepted since start, for tests of connection reuse. */
  readonly connectionsAccepted = { tls: 0, plain: 0 };

  constructor(handle: Handler) {
    this.server = http.createServer((req, res) => {
      handle(req, res).catch((err: unknown) => {
        if (res.headersSent) {
          res.destroy();
          return;
        }
        sendError(
          res,
          err instanceof StatusError
            ? err
            : errors.internal(err instanceof Error ? err.message : String(err)),
        );
      });
    });
    // Watches stay open for a long time; keep-alive sockets may idle.
    this.server.keepAliveTimeout = 60_000;
    this.server.requestTimeout = 0;
  }

  /**
   * One port speaks both plain HTTP and HTTPS (told apart by the first byte, 0x16 opens a TLS handshake):
   * client-go, hence kubectl, sends a bearer token only over https, while client-node and curl keep using
   * http://. The self-signed certificate is made on the first TLS connection.
   */
  async listen(port: number, host: string): Promise<number> {
    const listener = net.createServer((socket) => {
      this.sockets.add(socket);
      socket.once('close', () => this.sockets.delete(socket));
      // Until the HTTP or TLS server takes the socket over (with its own handler), a reset must not throw.
      const early = (): void => {
        socket.destroy();
      };
      socket.on('error', early);
      socket.once('data', (first: Buffer) => {
        socket.off('error', early);
        socket.pause();
        socket.unshift(first);
        if (first[0] === 0x16) {
          this.connectionsAccepted.tls++;
          this.tlsServer().emit('connection', socket);
        } else {
          this.connectionsAccepted.plain++;
          this.server.emit('connection', socket);
        }
        process.nextTick(() => socket.resume());
      });
    });
    this.listener = listener;
    await new Promise<void>((resolve, reject) => {
      listener.once('error', reject);
      listener.listen(port, host, () => {
        listener.off('error', reject);
        resolve();
      });
    });
    return (listener.address() as AddressInfo).port;
  }

  private tlsServer(): tls.Server {
    this.tls ??= tls
      .createServer(selfSignedCertificate(), (socket) => this.server.emit('connection', socket))
      .on('tlsClientError', (_err, socket) => socket.destroy());
    return this.tls;
  }

  /** Drops every connection and stops listening. */
  async close(): Promise<void> {
    for (const s of this.sockets) s.destroy();
    this.sockets.clear();
    const listener = this.listener;
    if (listener) {
      await new Promise<void>((resolve) => {
        listener.close(() => {
          resolve();
        });
      });
    }
  }
}

/** Whether the request carries one of the accepted bearer tokens. */
export function authorized(req: http.IncomingMessage, tokens: ReadonlySet<string>): boolean {
  const h = req.headers.authorization;
  if (!h?.startsWith('Bearer ')) return false;
  return tokens.has(h.slice(7).trim());
}
