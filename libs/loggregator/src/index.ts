export * from './envelope.js';
export * from './bounded-queue.js';
export * from './sender.js';
export { PROTO_DIR, PROTO_OPTIONS } from './proto.js';
