export * from './registry.js';
export * from './connection.js';
export * from './producer.js';
