export * from './lrp.js';
export * from './errors.js';
export * from './image.js';
