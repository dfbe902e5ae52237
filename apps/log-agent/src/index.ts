export * from './origins.js';
export * from './shipper.js';
export * from './start.js';
