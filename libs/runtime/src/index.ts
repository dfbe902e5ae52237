export * from './settings.js';
export * from './shutdown.js';
export * from './redis.js';
export * from './http-server.js';
