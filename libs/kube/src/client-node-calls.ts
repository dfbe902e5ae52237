/**
 * The adapter's per-resource table: which client-node call serves each verb of each kind the port reaches.
 * Requests go as our objects unchanged (client-node's serializer passes string timestamps through, and no
 * model of the kinds used here renames a field); patches go labelled as merge patches.
 */
import {
  AppsV1Api,
  BatchV1Api,
  CoordinationV1Api,
  CoreV1Api,
  PatchStrategy,
  PolicyV1Api,
  VersionApi,
  setHeaderOptions,
  type Configuration,
} from '@kubernetes/client-node';
import type { Answer } from './client-node-transport.js';
import type {
  CoreEvent,
  Deployment,
  Job,
  KubeObject,
  Lease,
  Namespace,
  Pod,
  PodDisruptionBudget,
  Secret,
  StatefulSet,
} from './objects.js';

/** client-node would otherwise label a merge patch as a JSON patch, which a real apiserver refuses. */
const MERGE_PATCH = setHeaderOptions('Content-Type', PatchStrategy.MergePatch);

/** One page of a list request. */
export interface Page {
  limit: number;
  _continue?: string;
}

/** The calls of one kind by verb, for objects of type `T`; `resource` is its plural name. */
export interface ResourceCalls<T> {
  resource: string;
  read(namespace: string, name: string): Promise<Answer>;
  create(namespace: string, body: T): Promise<Answer>;
  replace(namespace: string, name: string, body: T): Promise<Answer>;
  remove(namespace: string, name: string): Promise<Answer>;
  /** `namespace` undefined: every namespace. `selector` is a label selector (for events, a field selector). */
  list(namespace: string | undefined, page: Page, selector: string | undefined): Promise<Answer>;
  /** A merge patch. */
  patch(namespace: string, name: string, body: object): Promise<Answer>;
}

/** The verbs `V` of a kind's calls. */
export type Calls<T, V extends keyof ResourceCalls<T>> = Pick<ResourceCalls<T>, 'resource' | V>;

type Crud = 'read' | 'create' | 'replace' | 'remove';

export interface ClientNodeCalls {
  deployments: Calls<Deployment, Crud | 'list'>;
  statefulsets: Calls<StatefulSet, Crud | 'list'>;
  secrets: Calls<Secret, Crud>;
  poddisruptionbudgets: Calls<PodDisruptionBudget, Crud>;
  jobs: Calls<Job, Crud | 'list' | 'patch'>;
  leases: Calls<Lease, 'read' | 'create' | 'replace'>;
  pods: Calls<Pod, 'read' | 'remove' | 'list' | 'patch'>;
  events: Calls<CoreEvent, 'list'>;
  /** Cluster-scoped: `read` ignores the namespace. */
  namespaces: Calls<Namespace, 'read'>;
  version(): Promise<Answer>;
}

/** Our object to client-node's request type. Sound because only the wire shape matters (see top). */
function body(o: KubeObject): never {
  return o as never;
}

export function clientNodeCalls(configuration: Configuration): ClientNodeCalls {
  const core = new CoreV1Api(configuration);
  const apps = new AppsV1Api(configuration);
  const batch = new BatchV1Api(configuration);
  const policy = new PolicyV1Api(configuration);
  const coordination = new CoordinationV1Api(configuration);
  const version = new VersionApi(configuration);
  // Background propagation everywhere: for Jobs the batch/v1 default would orphan the pods; for the
  // rest it is the default anyway, and being explicit keeps the behaviour independent of the kind.
  const propagationPolicy = 'Background';
  return {
    deployments: {
      resource: 'deployments',
      read: (namespace, name) => apps.readNamespacedDeploymentWithHttpInfo({ namespace, name }),
      create: (namespace, o) => apps.createNamespacedDeploymentWithHttpInfo({ namespace, body: body(o) }),
      replace: (namespace, name, o) =>
        apps.replaceNamespacedDeploymentWithHttpInfo({ namespace, name, body: body(o) }),
      remove: (namespace, name) =>
        apps.deleteNamespacedDeploymentWithHttpInfo({ namespace, name, propagationPolicy }),
      list: (namespace, page, labelSelector) =>
        namespace === undefined
          ? apps.listDeploymentForAllNamespacesWithHttpInfo({ ...page, labelSelector })
          : apps.listNamespacedDeploymentWithHttpInfo({ ...page, namespace, labelSelector }),
    },
    statefulsets: {
      resource: 'statefulsets',
      read: (namespace, name) => apps.readNamespacedStatefulSetWithHttpInfo({ namespace, name }),
      create: (namespace, o) => apps.createNamespacedStatefulSetWithHttpInfo({ namespace, body: body(o) }),
      replace: (namespace, name, o) =>
        apps.replaceNamespacedStatefulSetWithHttpInfo({ namespace, name, body: body(o) }),
      remove: (namespace, name) =>
        apps.deleteNamespacedStatefulSetWithHttpInfo({ namespace, name, propagationPolicy }),
      list: (namespace, page, labelSelector) =>
        namespace === undefined
          ? apps.listStatefulSetForAllNamespacesWithHttpInfo({ ...page, labelSelector })
          : apps.listNamespacedStatefulSetWithHttpInfo({ ...page, namespace, labelSelector }),
    },
    secrets: {
      resource: 'secrets',
      read: (namespace, name) => core.readNamespacedSecretWithHttpInfo({ namespace, name }),
      create: (namespace, o) => core.createNamespacedSecretWithHttpInfo({ namespace, body: body(o) }),
      replace: (namespace, name, o) =>
        core.replaceNamespacedSecretWithHttpInfo({ namespace, name, body: body(o) }),
      remove: (namespace, name) =>
        core.deleteNamespacedSecretWithHttpInfo({ namespace, name, propagationPolicy }),
    },
    poddisruptionbudgets: {
      resource: 'poddisruptionbudgets',
      read: (namespace, name) => policy.readNamespacedPodDisruptionBudgetWithHttpInfo({ namespace, name }),
      create: (namespace, o) =>
        policy.createNamespacedPodDisruptionBudgetWithHttpInfo({ namespace, body: body(o) }),
      replace: (namespace, name, o) =>
        policy.replaceNamespacedPodDisruptionBudgetWithHttpInfo({ namespace, name, body: body(o) }),
      remove: (namespace, name) =>
        policy.deleteNamespacedPodDisruptionBudgetWithHttpInfo({ namespace, name, propagationPolicy }),
    },
    jobs: {
      resource: 'jobs',
      read: (namespace, name) => batch.readNamespacedJobWithHttpInfo({ namespace, name }),
      create: (namespace, o) => batch.createNamespacedJobWithHttpInfo({ namespace, body: body(o) }),
      replace: (namespace, name, o) =>
        batch.replaceNamespacedJobWithHttpInfo({ namespace, name, body: body(o) }),
      remove: (namespace, name) =>
        batch.deleteNamespacedJobWithHttpInfo({ namespace, name, propagationPolicy }),
      list: (namespace, page, labelSelector) =>
        namespace === undefined
          ? batch.listJobForAllNamespacesWithHttpInfo({ ...page, labelSelector })
          : batch.listNamespacedJobWithHttpInfo({ ...page, namespace, labelSelector }),
      patch: (namespace, name, patch) =>
        batch.patchNamespacedJobWithHttpInfo({ namespace, name, body: patch }, MERGE_PATCH),
    },
    leases: {
      resource: 'leases',
      read: (namespace, name) => coordination.readNamespacedLeaseWithHttpInfo({ namespace, name }),
      create: (namespace, o) => coordination.createNamespacedLeaseWithHttpInfo({ namespace, body: body(o) }),
      replace: (namespace, name, o) =>
        coordination.replaceNamespacedLeaseWithHttpInfo({ namespace, name, body: body(o) }),
    },
    pods: {
      resource: 'pods',
      read: (namespace, name) => core.readNamespacedPodWithHttpInfo({ namespace, name }),
      remove: (namespace, name) => core.deleteNamespacedPodWithHttpInfo({ namespace, name }),
      list: (namespace, page, labelSelector) =>
        namespace === undefined
          ? core.listPodForAllNamespacesWithHttpInfo({ ...page, labelSelector })
          : core.listNamespacedPodWithHttpInfo({ ...page, namespace, labelSelector }),
      patch: (namespace, name, patch) =>
        core.patchNamespacedPodWithHttpInfo({ namespace, name, body: patch }, MERGE_PATCH),
    },
    events: {
      resource: 'events',
      list: (namespace, page, fieldSelector) =>
        namespace === undefined
          ? core.listEventForAllNamespacesWithHttpInfo({ ...page, fieldSelector })
          : core.listNamespacedEventWithHttpInfo({ ...page, namespace, fieldSelector }),
    },
    namespaces: {
      resource: 'namespaces',
      read: (_namespace, name) => core.readNamespaceWithHttpInfo({ name }),
    },
    version: () => version.getCodeWithHttpInfo(),
  };
}
