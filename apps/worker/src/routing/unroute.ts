/**
 * The unregister stop-instance sends before its DELETE, so gorouter stops sending requests to an
 * instance before it starts draining. Any worker may send it, not only the emitter: an unregister of a
 * pod about to go cannot undo a successor's work, and if the DELETE then fails, the emitter registers the
 * instance again within one register interval.
 */
import type { RoutingMetrics } from './route-emitter.js';
import { UNREGISTER } from './route-emitter.js';
import type { NatsPort } from './nats-port.js';

/** Publishes unregisters and waits for NATS to have them, at most this long (a cut connection never holds a stop). */
export const UNROUTE_FLUSH_MS = 1000;

export type Unroute = (messages: readonly string[]) => Promise<void>;

export function natsUnroute(nats: NatsPort, metrics?: Pick<RoutingMetrics, 'routingMessages'>): Unroute {
  return async (messages) => {
    if (messages.length === 0 || !nats.connected()) return;
    for (const m of messages) {
      nats.publish(UNREGISTER, m);
      metrics?.routingMessages.inc({ subject: UNREGISTER });
    }
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([
      nats.flush().catch(() => undefined),
      new Promise((r) => (timer = setTimeout(r, UNROUTE_FLUSH_MS))),
    ]);
    clearTimeout(timer);
  };
}
