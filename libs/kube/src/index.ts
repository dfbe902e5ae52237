/**
 * @opi/kube: the Kubernetes port the workers converge the cluster through, its adapter over
 * @kubernetes/client-node (the only place that imports it), and an in-memory fake for worker tests.
 */
export type { DeleteResult, KubernetesPort, ListResult, PatchResult, Select } from './port.js';
export { DEFAULT_PAGE_SIZE } from './port.js';
export * from './objects.js';
export {
  AlreadyExistsError,
  ConflictError,
  KubeApiError,
  classify,
  httpStatusOf,
  isKubeApiError,
  type CallContext,
  type KubeApiErrorInit,
} from './errors.js';
export {
  ClientNodeKubernetes,
  DEFAULT_MAX_CONCURRENT_REQUESTS,
  DEFAULT_REQUEST_TIMEOUT_MS,
  type ClientNodeKubernetesOptions,
  type KubeCallReport,
  type KubeVerb,
} from './client-node-adapter.js';
export {
  contextNamespace,
  loadKubeConfig,
  type KubeConfigSource,
  type KubeConnection,
} from './kubeconfig.js';
export {
  FakeKubernetes,
  type FailureRule,
  type FakeCall,
  type FakeFailure,
  type FakeKubernetesOptions,
  type FakeResource,
  type FakeVerb,
} from './fake.js';
