export * from './jobs.js';
export * from './connection.js';
export * from './producer.js';
export * from './depth.js';
export * from './callback-retry.js';
