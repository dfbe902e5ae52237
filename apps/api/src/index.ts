export * from './app.js';
export * from './start.js';
export * from './dashboard.js';
export * from './security.js';
