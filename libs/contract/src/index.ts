export * from './schemas.js';
export * from './desire-fast.js';
export * from './responses.js';
export * from './to-domain.js';
export * from './task-schemas.js';
export * from './task-to-domain.js';
export * from './runnable.js';
