export * from './state-store.js';
export * from './keys.js';
export * from './task-store.js';
export * from './inbox.js';
export * from './cache-writer.js';
export * from './instances-cache.js';
export { type SchedulingInfoEntries, schedulingInfoOfStopped } from './scheduling-infos.js';
export { StoreUnavailableError } from './unavailable.js';
export { type DesireRefusal, parseRefusal, refusalValue } from './refusals.js';
