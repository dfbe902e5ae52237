/**
 * @opi/metrics: the Prometheus registry and instruments of the API and the workers, the Express request
 * middleware, and the bounded checks behind /healthz and /readyz.
 */
export * from './metrics.js';
export * from './http.js';
export * from './health.js';
