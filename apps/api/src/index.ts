export * from './app.js';
export * from './start.js';
