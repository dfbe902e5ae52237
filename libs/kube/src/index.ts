/**
 * @opi/kube: the Kubernetes port the workers converge the cluster through (port/), its adapter over
 * @kubernetes/client-node, the only place that imports it (client-node/), the reflector that keeps a watched
 * resource's objects (reflector/) and the Lease-based leader election (leader-election/). Test aids are in
 * `@opi/kube/testing`.
 */
export type {
  Client,
  DeleteResult,
  KubernetesPort,
  ListResult,
  PatchResult,
  ResourceClient,
  ResourceName,
  ResourceKinds,
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
} from './port/port.js';
export { DEFAULT_PAGE_SIZE, RESOURCE_NAMES, isResourceName } from './port/port.js';
export * from './port/objects.js';
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
} from './port/errors.js';
export { createOrGet, type CreateOrGetResult } from './port/create-or-get.js';
export {
  ClientNodeKubernetes,
  DEFAULT_MAX_CONCURRENT_REQUESTS,
  DEFAULT_REQUEST_TIMEOUT_MS,
  type ClientNodeKubernetesOptions,
  type KubeCallReport,
  type KubeVerb,
} from './client-node/adapter.js';
export {
  configuredCluster,
  loadKubeConfig,
  type KubeConfigSource,
  type KubeConnection,
} from './client-node/kubeconfig.js';
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
} from './leader-election/leader-election.js';
export {
  DEFAULT_DEADLINE_GRACE_MS,
  DEFAULT_HEALTHY_AFTER_MS,
  DEFAULT_WATCH_TIMEOUT_SECONDS,
  Reflector,
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
} from './reflector/reflector.js';
