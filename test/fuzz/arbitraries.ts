/**
 * Inputs for the fuzz tests, one module per kind under arbitraries/: hostile names, environments,
 * lifecycles, LRP bodies, task and staging bodies, mutations of them, and raw requests (bytes, headers).
 */
export { deepJson, mutated, type Body } from './arbitraries/mutations.js';
export { crowdedDesireBody, egressRule, desireBody, routes, updateBody } from './arbitraries/lrp-bodies.js';
export { buildpackLifecycle, dockerLifecycle } from './arbitraries/lifecycles.js';
export { HOSTILE, anyName, dnsLabel, hostile, labelValue, longName, nameUpTo } from './arbitraries/names.js';
export { extraHeaders, rawBody, type RawBody } from './arbitraries/raw-requests.js';
export { stagingBody, taskBody } from './arbitraries/task-bodies.js';
