/**
 * The adapter's per-resource table: which client-node call serves each verb of each resource the port
 * offers (ResourceKinds; the compiler holds the two equal, and k8s/rbac.yaml is checked against it).
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
import type { Answer } from './transport.js';
import type { KubeObject } from '../port/objects.js';
import type { ResourceName, ResourceObjects, ResourceVerbs } from '../port/port.js';

/** client-node would otherwise label a merge patch as a JSON patch, which a real apiserver refuses. */
const MERGE_PATCH = setHeaderOptions('Content-Type', PatchStrategy.MergePatch);

/** One page of a list request. */
export interface Page {
  limit: number;
  _continue?: string;
}

/** The raw calls behind each verb of the port, for objects of type `T`. */
export interface RawCalls<T> {
  get(namespace: string, name: string): Promise<Answer>;
  create(namespace: string, body: T): Promise<Answer>;
  replace(namespace: string, name: string, body: T): Promise<Answer>;
  delete(namespace: string, name: string): Promise<Answer>;
  /** `namespace` undefined: every namespace. `selector` is a label selector (for events, a field selector). */
  list(namespace: string | undefined, page: Page, selector: string | undefined): Promise<Answer>;
  /** A merge patch. */
  annotate(namespace: string, name: string, body: object): Promise<Answer>;
}

/** One resource's calls: exactly the verbs the port gives it (ResourceVerbs), no more. */
export type CallsOf<R extends ResourceName> = { resource: R } & Pick<
  RawCalls<ResourceObjects[R]>,
  ResourceVerbs[R]
>;

export type ClientNodeCalls = { [R in ResourceName]: CallsOf<R> } & {
  /** Cluster-scoped. */
  namespace(name: string): Promise<Answer>;
  version(): Promise<Answer>;
};

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
      get: (namespace, name) => apps.readNamespacedDeploymentWithHttpInfo({ namespace, name }),
      create: (namespace, o) => apps.createNamespacedDeploymentWithHttpInfo({ namespace, body: body(o) }),
      replace: (namespace, name, o) =>
        apps.replaceNamespacedDeploymentWithHttpInfo({ namespace, name, body: body(o) }),
      delete: (namespace, name) =>
        apps.deleteNamespacedDeploymentWithHttpInfo({ namespace, name, propagationPolicy }),
      list: (namespace, page, labelSelector) =>
        namespace === undefined
          ? apps.listDeploymentForAllNamespacesWithHttpInfo({ ...page, labelSelector })
          : apps.listNamespacedDeploymentWithHttpInfo({ ...page, namespace, labelSelector }),
    },
    statefulsets: {
      resource: 'statefulsets',
      get: (namespace, name) => apps.readNamespacedStatefulSetWithHttpInfo({ namespace, name }),
      create: (namespace, o) => apps.createNamespacedStatefulSetWithHttpInfo({ namespace, body: body(o) }),
      replace: (namespace, name, o) =>
        apps.replaceNamespacedStatefulSetWithHttpInfo({ namespace, name, body: body(o) }),
      delete: (namespace, name) =>
        apps.deleteNamespacedStatefulSetWithHttpInfo({ namespace, name, propagationPolicy }),
      list: (namespace, page, labelSelector) =>
        namespace === undefined
          ? apps.listStatefulSetForAllNamespacesWithHttpInfo({ ...page, labelSelector })
          : apps.listNamespacedStatefulSetWithHttpInfo({ ...page, namespace, labelSelector }),
    },
    secrets: {
      resource: 'secrets',
      get: (namespace, name) => core.readNamespacedSecretWithHttpInfo({ namespace, name }),
      create: (namespace, o) => core.createNamespacedSecretWithHttpInfo({ namespace, body: body(o) }),
      replace: (namespace, name, o) =>
        core.replaceNamespacedSecretWithHttpInfo({ namespace, name, body: body(o) }),
      delete: (namespace, name) =>
        core.deleteNamespacedSecretWithHttpInfo({ namespace, name, propagationPolicy }),
    },
    poddisruptionbudgets: {
      resource: 'poddisruptionbudgets',
      get: (namespace, name) => policy.readNamespacedPodDisruptionBudgetWithHttpInfo({ namespace, name }),
      create: (namespace, o) =>
        policy.createNamespacedPodDisruptionBudgetWithHttpInfo({ namespace, body: body(o) }),
      delete: (namespace, name) =>
        policy.deleteNamespacedPodDisruptionBudgetWithHttpInfo({ namespace, name, propagationPolicy }),
    },
    jobs: {
      resource: 'jobs',
      get: (namespace, name) => batch.readNamespacedJobWithHttpInfo({ namespace, name }),
      create: (namespace, o) => batch.createNamespacedJobWithHttpInfo({ namespace, body: body(o) }),
      delete: (namespace, name) =>
        batch.deleteNamespacedJobWithHttpInfo({ namespace, name, propagationPolicy }),
      list: (namespace, page, labelSelector) =>
        namespace === undefined
          ? batch.listJobForAllNamespacesWithHttpInfo({ ...page, labelSelector })
          : batch.listNamespacedJobWithHttpInfo({ ...page, namespace, labelSelector }),
      annotate: (namespace, name, patch) =>
        batch.patchNamespacedJobWithHttpInfo({ namespace, name, body: patch }, MERGE_PATCH),
    },
    leases: {
      resource: 'leases',
      get: (namespace, name) => coordination.readNamespacedLeaseWithHttpInfo({ namespace, name }),
      create: (namespace, o) => coordination.createNamespacedLeaseWithHttpInfo({ namespace, body: body(o) }),
      replace: (namespace, name, o) =>
        coordination.replaceNamespacedLeaseWithHttpInfo({ namespace, name, body: body(o) }),
    },
    pods: {
      resource: 'pods',
      get: (namespace, name) => core.readNamespacedPodWithHttpInfo({ namespace, name }),
      delete: (namespace, name) => core.deleteNamespacedPodWithHttpInfo({ namespace, name }),
      list: (namespace, page, labelSelector) =>
        namespace === undefined
          ? core.listPodForAllNamespacesWithHttpInfo({ ...page, labelSelector })
          : core.listNamespacedPodWithHttpInfo({ ...page, namespace, labelSelector }),
      annotate: (namespace, name, patch) =>
        core.patchNamespacedPodWithHttpInfo({ namespace, name, body: patch }, MERGE_PATCH),
    },
    events: {
      resource: 'events',
      list: (namespace, page, fieldSelector) =>
        namespace === undefined
          ? core.listEventForAllNamespacesWithHttpInfo({ ...page, fieldSelector })
          : core.listNamespacedEventWithHttpInfo({ ...page, namespace, fieldSelector }),
    },
    namespace: (name) => core.readNamespaceWithHttpInfo({ name }),
    version: () => version.getCodeWithHttpInfo(),
  };
}
