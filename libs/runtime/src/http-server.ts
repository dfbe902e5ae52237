/** Listening and closing the processes' HTTP servers (the API, its admin port, a worker's metrics). */
import type { Server } from 'node:http';

/** Listens on `port` (0: any free one) and resolves with the port bound; a taken port rejects. */
export async function listen(server: Server, port: number, host: string): Promise<number> {
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const address = server.address();
  return typeof address === 'object' && address ? address.port : port;
}

/**
 * Stops accepting connections and resolves once the open ones are done. `idle`: only idle keep-alive
 * connections are cut (requests in flight finish); `all`: every connection is cut at once.
 */
export function closeServer(server: Server, cut: 'idle' | 'all' = 'idle'): Promise<void> {
  return new Promise<void>((resolve) => {
    server.close(() => {
      resolve();
    });
    if (cut === 'all') server.closeAllConnections();
    else server.closeIdleConnections();
  });
}
