/**
 * The NATS connection of a worker with OPI_ROUTING=nats, over @nats-io/transport-node: reconnects
 * forever and pings every 20 s (gorouter's own value, so a dead server is noticed before gorouter's
 * 120 s prune threshold). Credentials go to the client apart from the addresses; only addresses are logged.
 */
import { readFileSync } from 'node:fs';
import { type NatsConnection, connect, createInbox } from '@nats-io/transport-node';
import type { NatsServer } from '@opi/config';
import type { Logger } from '@opi/logging';
import type { NatsPort } from './nats-port.js';

export const NATS_PING_INTERVAL_MS = 20_000;

export interface NatsClientOptions {
  servers: NatsServer[];
  tls: { caFile?: string; certFile?: string; keyFile?: string } | undefined;
  /** Shown in the server's connection list (`/connz`). */
  name: string;
  logger: Logger;
  onConnected?(up: boolean): void;
}

export interface NatsClient extends NatsPort {
  close(): Promise<void>;
}

/**
 * Starts connecting and answers at once: the worker does not wait for NATS (routing degraded is not a
 * worker down). Until the first connection, publishes are dropped (everything is sent again on connect,
 * as after a reconnect) and subscriptions wait for it.
 */
export function startNats(o: NatsClientOptions): NatsClient {
  const credentials = o.servers.find((s) => s.user !== undefined);
  const addresses = o.servers.map((s) => s.server);
  const tls = o.tls
    ? {
        ...(o.tls.caFile ? { ca: readFileSync(o.tls.caFile, 'utf8') } : {}),
        ...(o.tls.certFile ? { cert: readFileSync(o.tls.certFile, 'utf8') } : {}),
        ...(o.tls.keyFile ? { key: readFileSync(o.tls.keyFile, 'utf8') } : {}),
      }
    : undefined;
  let nc: NatsConnection | undefined;
  let up = false;
  let closed = false;
  const reconnected = new Set<() => void>();
  /** Subscriptions asked for before the first connection, made on it. */
  const waiting: (() => void)[] = [];
  const setUp = (value: boolean): void => {
    up = value;
    o.onConnected?.(value);
  };
  const connecting = connect({
    servers: addresses,
    name: o.name,
    ...(credentials?.user !== undefined ? { user: credentials.user } : {}),
    ...(credentials?.pass !== undefined ? { pass: credentials.pass } : {}),
    ...(tls ? { tls } : {}),
    maxReconnectAttempts: -1,
    reconnectTimeWait: 1000,
    pingInterval: NATS_PING_INTERVAL_MS,
    maxPingOut: 2,
    waitOnFirstConnect: true,
  }).then(
    async (c) => {
      if (closed) {
        await c.close();
        return;
      }
      nc = c;
      setUp(true);
      o.logger.info({ servers: addresses, server: c.getServer() }, 'NATS connected');
      for (const subscribe of waiting.splice(0)) subscribe();
      for (const l of reconnected) l();
      for await (const s of c.status()) {
        if (s.type === 'disconnect') {
          setUp(false);
          o.logger.warn({ server: s.server }, 'NATS disconnected: routes are sent again once it is back');
        } else if (s.type === 'reconnect') {
          setUp(true);
          o.logger.info({ server: s.server }, 'NATS reconnected');
          for (const l of reconnected) l();
        } else if (s.type === 'error') {
          o.logger.warn({ err: s.error.message }, 'NATS error');
        }
      }
    },
    (err: unknown) => {
      o.logger.error({ err: err instanceof Error ? err.message : String(err) }, 'NATS connection failed');
    },
  );
  const subscribeNow = (c: NatsConnection, subject: string, onMessage: (body: string) => void) =>
    c.subscribe(subject, {
      callback: (err, msg) => {
        if (!err) onMessage(msg.string());
      },
    });
  return {
    publish: (subject, body) => {
      if (nc && !nc.isClosed()) nc.publish(subject, body);
    },
    flush: async () => {
      if (nc && !nc.isClosed()) await nc.flush();
    },
    subscribe: (subject, onMessage) => {
      let unsubscribe = (): void => undefined;
      let cancelled = false;
      const make = (): void => {
        if (cancelled || !nc) return;
        const sub = subscribeNow(nc, subject, onMessage);
        unsubscribe = () => {
          sub.unsubscribe();
        };
      };
      if (nc) make();
      else waiting.push(make);
      return () => {
        cancelled = true;
        unsubscribe();
      };
    },
    requestAll: async (subject, body, windowMs) => {
      const c = nc;
      if (!c || c.isClosed()) return [];
      const inbox = createInbox();
      const replies: string[] = [];
      const sub = subscribeNow(c, inbox, (reply) => replies.push(reply));
      c.publish(subject, body, { reply: inbox });
      await new Promise((r) => setTimeout(r, windowMs));
      sub.unsubscribe();
      return replies;
    },
    connected: () => up && nc !== undefined && !nc.isClosed(),
    onReconnect: (listener) => {
      reconnected.add(listener);
      return () => reconnected.delete(listener);
    },
    close: async () => {
      closed = true;
      const c = nc;
      nc = undefined;
      setUp(false);
      if (!c) return; // still connecting: closed as soon as it connects
      await c.drain().catch(() => c.close());
      await connecting;
    },
  };
}
