export * from './nats-port.js';
export * from './nats-client.js';
export * from './route-emitter.js';
export * from './unroute.js';
