export * from './state-store.js';
export * from './keys.js';
export * from './task-store.js';
export * from './inbox.js';
export * from './cache-writer.js';
