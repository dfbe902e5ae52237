/**
 * What a running container's declared port answers: a real HTTP listener on `<podIP>:<port>` (a loopback
 * address of the simulator's pod range), answering any request with 200 and JSON naming the pod, so a
 * router that dials pod IPs (CF's gorouter) reaches it as it reaches a real app.
 */
import http from 'node:http';

export interface PodIdentity {
  name: string;
  namespace: string;
  uid: string;
}

/** The body a pod's port answers with. */
export interface PodAnswer {
  pod: string;
  namespace: string;
  uid: string;
  port: number;
  /** The request's Host header ("" without one). */
  host: string;
  /** The request URL as received: path and query. */
  path: string;
}

export class PortListener {
  private readonly server: http.Server;
  private closing: Promise<void> | undefined;

  /**
   * Starts listening on host:port; `onError` is called once if the port cannot be bound
   * (EADDRINUSE, EADDRNOTAVAIL, …), after which the listener is closed and never answers.
   */
  constructor(
    pod: PodIdentity,
    readonly host: string,
    readonly port: number,
    onError: (err: NodeJS.ErrnoException) => void,
  ) {
    this.server = http.createServer((req, res) => {
      const answer: PodAnswer = {
        pod: pod.name,
        namespace: pod.namespace,
        uid: pod.uid,
        port,
        host: req.headers.host ?? '',
        path: req.url ?? '',
      };
      const body = JSON.stringify(answer);
      res.writeHead(200, {
        'Content-Type': 'application/json',
        'Content-Length': Buffer.byteLength(body),
        'X-Kubesim-Pod': pod.name,
      });
      res.end(body);
      // A request body is not read; drain it so a keep-alive connection stays usable.
      req.resume();
    });
    this.server.on('error', (err: NodeJS.ErrnoException) => {
      // Errors once closing (the container stopped while binding) are nobody's concern; an error of a
      // listening server (accept failing: EMFILE) closes it too, as the app would die of it.
      if (this.closing) return;
      void this.close();
      onError(err);
    });
    this.server.listen({ host, port, exclusive: true });
  }

  /** Stops listening and drops every connection, as the process behind it going away. */
  close(): Promise<void> {
    this.closing ??= new Promise<void>((resolve) => {
      // The callback comes also when the bind failed (with ERR_SERVER_NOT_RUNNING, of no interest).
      this.server.close(() => {
        resolve();
      });
      this.server.closeAllConnections();
    });
    return this.closing;
  }
}
