export * from './deps.js';
export * from './workers.js';
export { convergeLrp } from './handlers/converge-lrp.js';
export { syncCluster } from './handlers/sync-cluster.js';
export * from './start.js';
