/**
 * @opi/kube: the Kubernetes port the workers converge the cluster through, its adapter over
 * @kubernetes/client-node (the only place that imports it), and fault injection around any port for tests.
 */
export type {
  Client,
  DeleteResult,
  KubernetesPort,
  ListResult,
  PatchResult,
  ResourceClient,
  ResourceName,
  ResourceObjects,
  ResourceVerbs,
  Resources,
  Select,
  Verb,
  WatchEvent,
  WatchHandle,
  WatchOptions,
  WatchStatus,
  Watched,
  WatchedResource,
  ServerVersion,
} from './port.js';
export { DEFAULT_PAGE_SIZE, RESOURCE_NAMES, isResourceName } from './port.js';
export * from './objects.js';
export {
  AlreadyExistsError,
  ConflictError,
  KubeApiError,
  classify,
  httpStatusOf,
  missingNamespace,
  type CallContext,
  type KubeApiErrorInit,
  type StatusCause,
} from './errors.js';
export { createOrGet, type CreateOrGetResult } from './create-or-get.js';
export {
  ClientNodeKubernetes,
  DEFAULT_MAX_CONCURRENT_REQUESTS,
  DEFAULT_REQUEST_TIMEOUT_MS,
  type ClientNodeKubernetesOptions,
  type KubeCallReport,
  type KubeVerb,
} from './client-node-adapter.js';
export { loadKubeConfig, type KubeConfigSource, type KubeConnection } from './kubeconfig.js';
export {
  aroundCalls,
  unavailableError,
  withFaults,
  type Around,
  type CallName,
  type FaultControl,
  type FaultRule,
  type FaultTiming,
  type FaultyKubernetes,
  type InjectedFault,
} from './with-faults.js';
export {
  DEFAULT_ACQUIRE_JITTER,
  DEFAULT_LEASE_DURATION_MS,
  DEFAULT_RENEW_DEADLINE_MS,
  DEFAULT_RETRY_PERIOD_MS,
  LeaderElector,
  microTime,
  type LeaderElectionPhase,
  type LeaderElectorOptions,
  type LeasePort,
} from './leader-election.js';
export {
  DEFAULT_DEADLINE_GRACE_MS,
  DEFAULT_HEALTHY_AFTER_MS,
  DEFAULT_WATCH_TIMEOUT_SECONDS,
  Reflector,
  abortableSleep,
  objectKey,
  type AppliedEventType,
  type HeldVersion,
  type ReflectorBaseOptions,
  type ReflectorErrorInfo,
  type ReflectorHandler,
  type ReflectorObserver,
  type ReflectorOptions,
  type ReflectorPort,
  type ReflectorState,
  type RelistStats,
  type SyncReason,
  type Versioned,
  type WatchRestartReason,
} from './reflector.js';
export { Backoff, DEFAULT_BACKOFF, type BackoffOptions } from './backoff.js';
