export * from './lrp.js';
export * from './errors.js';
export * from './image.js';
export * from './task.js';
export * from './kube-names.js';
export * from './cc-limits.js';
export * from './shown-indexes.js';
