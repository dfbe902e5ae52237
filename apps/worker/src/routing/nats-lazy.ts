/**
 * The NATS client, loaded only by a worker that routes: its module costs a process about 11 MB of RSS,
 * which a worker with OPI_ROUTING=off (at 100k LRPs, within its memory target by less) should not pay.
 */
import type { NatsClient, NatsClientOptions } from './nats-client.js';

export async function connectNats(o: NatsClientOptions): Promise<NatsClient> {
  const { startNats } = await import('./nats-client.js');
  return startNats(o);
}
