export * from './nats-port.js';
export type { NatsClient, NatsClientOptions } from './nats-client.js';
export * from './nats-lazy.js';
export * from './route-emitter.js';
export * from './unroute.js';
