export * from './errors.js';
export * from './tls.js';
export * from './url.js';
export * from './client.js';
export * from './bodies.js';
