/** What a worker's /readyz says of routing: addresses only, never credentials. */
import type { CheckResult } from '@opi/metrics';

export function routingCheck(o: { connected: boolean; servers: string[]; emitting: boolean }): CheckResult {
  if (!o.connected) {
    return {
      ok: false,
      message: `NATS unreachable (${o.servers.join(', ')}): routes are not sent to gorouter; the worker still runs jobs`,
    };
  }
  return {
    ok: true,
    message: o.emitting
      ? 'NATS connected; this worker sends the routes'
      : 'NATS connected; the cache writer sends the routes',
  };
}
