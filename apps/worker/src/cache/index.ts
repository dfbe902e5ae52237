export * from './cluster-cache.js';
export * from './cluster-view.js';
export * from './instances-entry.js';
export * from './cache-leader.js';
export { checkWatches } from './watch-health.js';
