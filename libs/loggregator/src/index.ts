export * from './envelope.js';
export * from './bounded-queue.js';
export * from './sender.js';
export { ingressClientClass } from './proto.js';
