export * from './lrp.js';
export * from './errors.js';
