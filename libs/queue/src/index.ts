export * from './registry.js';
export * from './connection.js';
export * from './producer.js';
export * from './depth.js';
