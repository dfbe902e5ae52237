/**
 * @opi/kube-objects: the Kubernetes objects this service writes and reads, as wire JSON (what the API server
 * sends and takes): plain interfaces, timestamps as RFC 3339 strings, quantities as strings. Types only, so
 * that the translation, the port and the tests share them without depending on one another. Only the fields
 * the service uses or may meet are declared, each with the API's name and optionality, so that objects read
 * from a cluster type-check as they come: list items carry no apiVersion/kind, and the server writes `null`
 * for unset timestamps (e.g. `spec.template.metadata.creationTimestamp`, `lastProbeTime`).
 * Kept in one file past 500 lines: declarations only, one subject, whose types refer to one another.
 */

/** RFC 3339 time, seconds precision (`metav1.Time`), e.g. `2020-05-11T15:52:25Z`. */
export type Time = string;
/** RFC 3339 time with microseconds (`metav1.MicroTime`), e.g. `2020-05-11T15:52:25.123456Z`. */
export type MicroTime = string;
/** A resource quantity, e.g. `256M`, `100m`. The server always answers with strings. */
export type Quantity = string;
/** A port number or an IANA port name (`intstr.IntOrString`). */
export type IntOrString = number | string;

export interface OwnerReference {
  apiVersion: string;
  kind: string;
  name: string;
  uid: string;
  controller?: boolean;
  blockOwnerDeletion?: boolean;
}

/**
 * Metadata of a named object. `name` is required: every stored object has one and this service never asks
 * the server to generate names (which is what leaves it unset in the API schema).
 */
export interface ObjectMeta {
  name: string;
  generateName?: string;
  namespace?: string;
  uid?: string;
  resourceVersion?: string;
  generation?: number;
  creationTimestamp?: Time | null;
  deletionTimestamp?: Time | null;
  deletionGracePeriodSeconds?: number;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
  ownerReferences?: OwnerReference[];
  finalizers?: string[];
}

export interface ListMeta {
  resourceVersion?: string;
  continue?: string;
  remainingItemCount?: number;
}

/** A list response (`DeploymentList`, `PodList`, ...): the items carry no apiVersion/kind. */
export interface KubeList<T> {
  apiVersion?: string;
  kind?: string;
  metadata: ListMeta;
  items: T[];
}

export interface LabelSelectorRequirement {
  key: string;
  operator: 'In' | 'NotIn' | 'Exists' | 'DoesNotExist';
  values?: string[];
}

export interface LabelSelector {
  matchLabels?: Record<string, string>;
  matchExpressions?: LabelSelectorRequirement[];
}

// --- Pod spec -----------------------------------------------------------------------------------------

export interface ObjectFieldSelector {
  apiVersion?: string;
  fieldPath: string;
}

export interface EnvVarSource {
  fieldRef?: ObjectFieldSelector;
  resourceFieldRef?: { containerName?: string; resource: string; divisor?: Quantity };
  configMapKeyRef?: { name?: string; key: string; optional?: boolean };
  secretKeyRef?: { name?: string; key: string; optional?: boolean };
}

export interface EnvVar {
  name: string;
  value?: string;
  valueFrom?: EnvVarSource;
}

export interface ContainerPort {
  containerPort: number;
  name?: string;
  protocol?: 'TCP' | 'UDP' | 'SCTP';
  hostPort?: number;
  hostIP?: string;
}

export interface ResourceRequirements {
  requests?: Record<string, Quantity>;
  limits?: Record<string, Quantity>;
}

export interface HTTPHeader {
  name: string;
  value: string;
}

export interface Probe {
  exec?: { command?: string[] };
  httpGet?: {
    path?: string;
    port: IntOrString;
    host?: string;
    scheme?: 'HTTP' | 'HTTPS';
    httpHeaders?: HTTPHeader[];
  };
  tcpSocket?: { port: IntOrString; host?: string };
  grpc?: { port: number; service?: string };
  initialDelaySeconds?: number;
  timeoutSeconds?: number;
  periodSeconds?: number;
  successThreshold?: number;
  failureThreshold?: number;
  terminationGracePeriodSeconds?: number;
}

export interface SecurityContext {
  allowPrivilegeEscalation?: boolean;
  privileged?: boolean;
  readOnlyRootFilesystem?: boolean;
  runAsNonRoot?: boolean;
  runAsUser?: number;
  runAsGroup?: number;
  capabilities?: { add?: string[]; drop?: string[] };
}

export interface VolumeMount {
  name: string;
  mountPath: string;
  readOnly?: boolean;
  subPath?: string;
}

export interface Container {
  name: string;
  image?: string;
  imagePullPolicy?: 'Always' | 'IfNotPresent' | 'Never';
  command?: string[];
  args?: string[];
  workingDir?: string;
  env?: EnvVar[];
  ports?: ContainerPort[];
  resources?: ResourceRequirements;
  startupProbe?: Probe;
  livenessProbe?: Probe;
  readinessProbe?: Probe;
  securityContext?: SecurityContext;
  volumeMounts?: VolumeMount[];
  terminationMessagePath?: string;
  terminationMessagePolicy?: 'File' | 'FallbackToLogsOnError';
}

export interface Volume {
  name: string;
  persistentVolumeClaim?: { claimName: string; readOnly?: boolean };
  emptyDir?: { medium?: string; sizeLimit?: Quantity };
  secret?: { secretName?: string; optional?: boolean; defaultMode?: number };
  configMap?: { name?: string; optional?: boolean; defaultMode?: number };
}

export interface PodAffinityTerm {
  labelSelector?: LabelSelector;
  namespaces?: string[];
  namespaceSelector?: LabelSelector;
  topologyKey: string;
}

export interface WeightedPodAffinityTerm {
  weight: number;
  podAffinityTerm: PodAffinityTerm;
}

export interface PodAffinity {
  requiredDuringSchedulingIgnoredDuringExecution?: PodAffinityTerm[];
  preferredDuringSchedulingIgnoredDuringExecution?: WeightedPodAffinityTerm[];
}

/** Same shape as PodAffinity, with the opposite meaning. */
export type PodAntiAffinity = PodAffinity;

export interface Affinity {
  podAffinity?: PodAffinity;
  podAntiAffinity?: PodAntiAffinity;
  /** Not used by this service; kept opaque. */
  nodeAffinity?: Record<string, unknown>;
}

export interface Toleration {
  key?: string;
  operator?: 'Exists' | 'Equal';
  value?: string;
  effect?: 'NoSchedule' | 'PreferNoSchedule' | 'NoExecute';
  tolerationSeconds?: number;
}

export interface PodSpec {
  containers: Container[];
  initContainers?: Container[];
  volumes?: Volume[];
  imagePullSecrets?: { name: string }[];
  restartPolicy?: 'Always' | 'OnFailure' | 'Never';
  terminationGracePeriodSeconds?: number;
  serviceAccountName?: string;
  automountServiceAccountToken?: boolean;
  enableServiceLinks?: boolean;
  nodeName?: string;
  nodeSelector?: Record<string, string>;
  affinity?: Affinity;
  tolerations?: Toleration[];
  securityContext?: { runAsNonRoot?: boolean; runAsUser?: number; runAsGroup?: number; fsGroup?: number };
  schedulerName?: string;
  priorityClassName?: string;
}

/** Pod template metadata: the pods' names come from their controller, so the template has none. */
export type TemplateMeta = Omit<ObjectMeta, 'name'> & { name?: string };

export interface PodTemplateSpec {
  metadata?: TemplateMeta;
  spec?: PodSpec;
}

// --- Pod status ---------------------------------------------------------------------------------------

export type ConditionStatus = 'True' | 'False' | 'Unknown';

export interface PodCondition {
  type: string;
  status: ConditionStatus;
  reason?: string;
  message?: string;
  lastProbeTime?: Time | null;
  lastTransitionTime?: Time | null;
}

export interface ContainerStateWaiting {
  reason?: string;
  message?: string;
}

export interface ContainerStateRunning {
  startedAt?: Time | null;
}

export interface ContainerStateTerminated {
  exitCode: number;
  signal?: number;
  reason?: string;
  message?: string;
  startedAt?: Time | null;
  finishedAt?: Time | null;
  containerID?: string;
}

/** At most one member is set. */
export interface ContainerState {
  waiting?: ContainerStateWaiting;
  running?: ContainerStateRunning;
  terminated?: ContainerStateTerminated;
}

export interface ContainerStatus {
  name: string;
  ready: boolean;
  restartCount: number;
  image: string;
  imageID: string;
  containerID?: string;
  started?: boolean;
  state?: ContainerState;
  lastState?: ContainerState;
}

export type PodPhase = 'Pending' | 'Running' | 'Succeeded' | 'Failed' | 'Unknown';

export interface PodStatus {
  phase?: PodPhase;
  conditions?: PodCondition[];
  message?: string;
  reason?: string;
  nominatedNodeName?: string;
  hostIP?: string;
  podIP?: string;
  podIPs?: { ip: string }[];
  startTime?: Time | null;
  initContainerStatuses?: ContainerStatus[];
  containerStatuses?: ContainerStatus[];
  qosClass?: 'Guaranteed' | 'Burstable' | 'BestEffort';
}

export interface Pod {
  apiVersion?: 'v1';
  kind?: 'Pod';
  metadata: ObjectMeta;
  spec?: PodSpec;
  status?: PodStatus;
}

// --- Workloads ----------------------------------------------------------------------------------------

export interface DeploymentStrategy {
  type?: 'RollingUpdate' | 'Recreate';
  rollingUpdate?: { maxSurge?: IntOrString; maxUnavailable?: IntOrString };
}

export interface DeploymentSpec {
  replicas?: number;
  selector: LabelSelector;
  template: PodTemplateSpec;
  strategy?: DeploymentStrategy;
  minReadySeconds?: number;
  revisionHistoryLimit?: number;
  paused?: boolean;
  progressDeadlineSeconds?: number;
}

export interface DeploymentCondition {
  type: string;
  status: ConditionStatus;
  reason?: string;
  message?: string;
  lastUpdateTime?: Time | null;
  lastTransitionTime?: Time | null;
}

export interface DeploymentStatus {
  observedGeneration?: number;
  replicas?: number;
  updatedReplicas?: number;
  readyReplicas?: number;
  availableReplicas?: number;
  unavailableReplicas?: number;
  collisionCount?: number;
  conditions?: DeploymentCondition[];
}

export interface Deployment {
  apiVersion?: 'apps/v1';
  kind?: 'Deployment';
  metadata: ObjectMeta;
  spec?: DeploymentSpec;
  status?: DeploymentStatus;
}

export interface StatefulSetSpec {
  replicas?: number;
  selector: LabelSelector;
  template: PodTemplateSpec;
  /** The headless Service that would govern the pods' DNS names; apps have none, so "". */
  serviceName: string;
  podManagementPolicy?: 'OrderedReady' | 'Parallel';
  updateStrategy?: {
    type?: 'RollingUpdate' | 'OnDelete';
    rollingUpdate?: { partition?: number; maxUnavailable?: IntOrString };
  };
  revisionHistoryLimit?: number;
  minReadySeconds?: number;
}

export interface StatefulSetStatus {
  observedGeneration?: number;
  replicas?: number;
  readyReplicas?: number;
  availableReplicas?: number;
  currentReplicas?: number;
  updatedReplicas?: number;
  currentRevision?: string;
  updateRevision?: string;
}

export interface StatefulSet {
  apiVersion?: 'apps/v1';
  kind?: 'StatefulSet';
  metadata: ObjectMeta;
  spec?: StatefulSetSpec;
  status?: StatefulSetStatus;
}

// --- Jobs (tasks and staging) -------------------------------------------------------------------------

export interface JobSpec {
  template: PodTemplateSpec;
  parallelism?: number;
  completions?: number;
  backoffLimit?: number;
  activeDeadlineSeconds?: number;
  ttlSecondsAfterFinished?: number;
  selector?: LabelSelector;
  manualSelector?: boolean;
  suspend?: boolean;
}

/**
 * `Complete` and `Failed` end a Job; since Kubernetes 1.31 `SuccessCriteriaMet` and `FailureTarget` come
 * first, while the pods are still terminating.
 */
export interface JobCondition {
  type: string;
  status: ConditionStatus;
  reason?: string;
  message?: string;
  lastProbeTime?: Time | null;
  lastTransitionTime?: Time | null;
}

export interface JobStatus {
  active?: number;
  succeeded?: number;
  failed?: number;
  ready?: number;
  terminating?: number;
  startTime?: Time | null;
  completionTime?: Time | null;
  conditions?: JobCondition[];
}

export interface Job {
  apiVersion?: 'batch/v1';
  kind?: 'Job';
  metadata: ObjectMeta;
  spec?: JobSpec;
  status?: JobStatus;
}

export interface Secret {
  apiVersion?: 'v1';
  kind?: 'Secret';
  metadata: ObjectMeta;
  type?: string;
  /** Values are base64. */
  data?: Record<string, string>;
  /** Write-only convenience: the server moves it into `data`. */
  stringData?: Record<string, string>;
  immutable?: boolean;
}

export interface PodDisruptionBudgetSpec {
  minAvailable?: IntOrString;
  maxUnavailable?: IntOrString;
  selector?: LabelSelector;
  unhealthyPodEvictionPolicy?: 'IfHealthyBudget' | 'AlwaysAllow';
}

export interface PodDisruptionBudgetStatus {
  observedGeneration?: number;
  disruptionsAllowed: number;
  currentHealthy: number;
  desiredHealthy: number;
  expectedPods: number;
  disruptedPods?: Record<string, Time>;
  conditions?: DeploymentCondition[];
}

export interface PodDisruptionBudget {
  apiVersion?: 'policy/v1';
  kind?: 'PodDisruptionBudget';
  metadata: ObjectMeta;
  spec?: PodDisruptionBudgetSpec;
  status?: PodDisruptionBudgetStatus;
}

// --- Events -------------------------------------------------------------------------------------------

export interface ObjectReference {
  apiVersion?: string;
  kind?: string;
  name?: string;
  namespace?: string;
  uid?: string;
  resourceVersion?: string;
  fieldPath?: string;
}

/** A core/v1 Event (the `events.k8s.io` group names the same object differently). */
export interface CoreEvent {
  apiVersion?: 'v1';
  kind?: 'Event';
  metadata: ObjectMeta;
  involvedObject: ObjectReference;
  reason?: string;
  message?: string;
  type?: 'Normal' | 'Warning';
  source?: { component?: string; host?: string };
  count?: number;
  firstTimestamp?: Time | null;
  lastTimestamp?: Time | null;
  eventTime?: MicroTime | null;
  series?: { count?: number; lastObservedTime?: MicroTime };
  action?: string;
  related?: ObjectReference;
  reportingComponent?: string;
  reportingInstance?: string;
}

// --- Namespaces ---------------------------------------------------------------------------------------

export interface Namespace {
  apiVersion?: 'v1';
  kind?: 'Namespace';
  metadata: ObjectMeta;
  status?: { phase?: 'Active' | 'Terminating' };
}

// --- Leases (leader election of the cache writer) ---------------------------------------------------

/** coordination.k8s.io/v1 Lease; times are RFC 3339 with microseconds (MicroTime). */
export interface Lease {
  apiVersion?: 'coordination.k8s.io/v1';
  kind?: 'Lease';
  metadata: ObjectMeta;
  spec?: {
    holderIdentity?: string;
    leaseDurationSeconds?: number;
    acquireTime?: string;
    renewTime?: string;
    leaseTransitions?: number;
  };
}
