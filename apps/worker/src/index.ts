export * from './deps.js';
export * from './workers.js';
export { convergeLrp } from './handlers/converge-lrp.js';
export { syncCluster } from './handlers/sync-cluster.js';
export * from './start.js';
export * from './cache/index.js';
export { onJobChanged } from './handlers/sync-jobs.js';
export type { SyncReport } from './handlers/sync-cluster.js';
export { StartRefusedError } from './workload-mode.js';
