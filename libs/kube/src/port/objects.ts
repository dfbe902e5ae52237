/**
 * Kubernetes objects as wire JSON (what the API server sends and takes). The kinds an LRP becomes are the
 * translation's own types (Jobs included), so objects pass between the port and the translation
 * unchanged; Namespace and the port's `KubeObject`/`Stored` are declared here.
 */
import type { ObjectMeta, Time } from '@opi/translation';

export type {
  Job,
  JobSpec,
  JobStatus,
  JobCondition,
  Time,
  MicroTime,
  Quantity,
  IntOrString,
  OwnerReference,
  ObjectMeta,
  ListMeta,
  KubeList,
  LabelSelectorRequirement,
  LabelSelector,
  ObjectFieldSelector,
  EnvVarSource,
  EnvVar,
  ContainerPort,
  ResourceRequirements,
  HTTPHeader,
  Probe,
  SecurityContext,
  VolumeMount,
  Container,
  Volume,
  PodAffinityTerm,
  WeightedPodAffinityTerm,
  PodAffinity,
  PodAntiAffinity,
  Affinity,
  Toleration,
  PodSpec,
  TemplateMeta,
  PodTemplateSpec,
  ConditionStatus,
  PodCondition,
  ContainerStateWaiting,
  ContainerStateRunning,
  ContainerStateTerminated,
  ContainerState,
  ContainerStatus,
  PodPhase,
  PodStatus,
  Pod,
  DeploymentStrategy,
  DeploymentSpec,
  DeploymentCondition,
  DeploymentStatus,
  Deployment,
  StatefulSetSpec,
  StatefulSetStatus,
  StatefulSet,
  Secret,
  PodDisruptionBudgetSpec,
  PodDisruptionBudgetStatus,
  PodDisruptionBudget,
  ObjectReference,
  CoreEvent,
} from '@opi/translation';

// --- Namespaces (not in the translation's types) ---------------------------------------------------

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

// --- What the port relies on ------------------------------------------------------------------------------

/** What every object has; the adapter and the fake rely on nothing else. */
export interface KubeObject {
  apiVersion?: string;
  kind?: string;
  metadata?: ObjectMeta;
}

/** Metadata the API server always fills on an object it returns. */
export interface StoredMeta extends ObjectMeta {
  name: string;
  uid: string;
  resourceVersion: string;
  creationTimestamp: Time;
}

/** An object as read back from the cluster: identity and resourceVersion are known. */
export type Stored<T extends KubeObject> = T & { metadata: StoredMeta };
