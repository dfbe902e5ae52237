export * from './state-store.js';
export * from './keys.js';
