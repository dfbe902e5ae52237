export * from './cluster-cache.js';
export * from './cache-leader.js';
export { checkWatches } from './watch-health.js';
