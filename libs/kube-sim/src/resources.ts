/**
 * The resource types the simulator serves: where they live in the URL space, what discovery says about
 * them, and the per-type rules the generic store applies (status split, generation, delete answer).
 * Adding a type is one entry here; kinds with behaviour get a controller of their own.
 */
import type { KubeObject } from './types.js';

export type Subresource = 'status' | 'scale' | 'log' | 'eviction' | 'binding';

export interface ResourceType {
  group: string; // '' for the core group
  version: string;
  plural: string;
  singular: string;
  kind: string;
  namespaced: boolean;
  shortNames?: string[];
  categories?: string[];
  subresources: Subresource[];
  /** Spec-carrying kinds bump metadata.generation on spec changes and keep .status out of main writes. */
  hasStatus: boolean;
  /** Pods answer DELETE with the object; most kinds answer with a Status (store.go ReturnDeletedObject). */
  returnsDeletedObject: boolean;
  /** batch/v1 Jobs orphan their pods when no propagation policy is given ("backwards compatibility"). */
  defaultPropagation: 'Background' | 'Orphan';
  /** metadata.name rule: most kinds are DNS-1123 subdomains, some DNS-1123 labels. */
  nameRule: 'subdomain' | 'label';
  /** Extra field-selector fields beyond metadata.name / metadata.namespace. */
  fields?: Record<string, (o: KubeObject) => string | undefined>;
}

export function apiVersionOf(t: ResourceType): string {
  return t.group ? `${t.group}/${t.version}` : t.version;
}

/** Key of a type within the store: `apps/deployments`, `/pods`. */
export function typeKey(t: ResourceType): string {
  return `${t.group}/${t.plural}`;
}

function str(v: unknown): string | undefined {
  return typeof v === 'string' ? v : typeof v === 'number' || typeof v === 'boolean' ? String(v) : undefined;
}
function path(o: unknown, ...keys: string[]): unknown {
  let cur: unknown = o;
  for (const k of keys) {
    if (typeof cur !== 'object' || cur === null) return undefined;
    cur = (cur as Record<string, unknown>)[k];
  }
  return cur;
}

interface Def extends Partial<ResourceType> {
  group: string;
  version: string;
  plural: string;
  kind: string;
}

function def(d: Def): ResourceType {
  return {
    singular: d.kind.toLowerCase(),
    namespaced: true,
    subresources: [],
    hasStatus: false,
    returnsDeletedObject: false,
    defaultPropagation: 'Background',
    nameRule: 'subdomain',
    ...d,
  };
}

/** A pod's fields by path, for field selectors (and the kubelet's downward API, which shares some). */
export const POD_FIELDS: Record<string, (o: KubeObject) => string | undefined> = {
  'spec.nodeName': (o) => str(path(o, 'spec', 'nodeName')) ?? '',
  'spec.restartPolicy': (o) => str(path(o, 'spec', 'restartPolicy')),
  'spec.schedulerName': (o) => str(path(o, 'spec', 'schedulerName')),
  'spec.serviceAccountName': (o) => str(path(o, 'spec', 'serviceAccountName')),
  'status.phase': (o) => str(path(o, 'status', 'phase')),
  'status.podIP': (o) => str(path(o, 'status', 'podIP')) ?? '',
  'status.nominatedNodeName': (o) => str(path(o, 'status', 'nominatedNodeName')) ?? '',
};

const eventFields: Record<string, (o: KubeObject) => string | undefined> = {
  'involvedObject.kind': (o) => str(path(o, 'involvedObject', 'kind')),
  'involvedObject.namespace': (o) => str(path(o, 'involvedObject', 'namespace')),
  'involvedObject.name': (o) => str(path(o, 'involvedObject', 'name')),
  'involvedObject.uid': (o) => str(path(o, 'involvedObject', 'uid')),
  'involvedObject.apiVersion': (o) => str(path(o, 'involvedObject', 'apiVersion')),
  'involvedObject.resourceVersion': (o) => str(path(o, 'involvedObject', 'resourceVersion')),
  'involvedObject.fieldPath': (o) => str(path(o, 'involvedObject', 'fieldPath')),
  reason: (o) => str(o['reason']),
  type: (o) => str(o['type']),
  source: (o) => str(path(o, 'source', 'component')),
  reportingComponent: (o) => str(o['reportingComponent']),
};

export const RESOURCE_TYPES: readonly ResourceType[] = [
  // core/v1
  def({
    group: '',
    version: 'v1',
    plural: 'namespaces',
    kind: 'Namespace',
    namespaced: false,
    shortNames: ['ns'],
    subresources: ['status'],
    hasStatus: true,
    nameRule: 'label',
    fields: { 'status.phase': (o) => str(path(o, 'status', 'phase')) },
  }),
  def({
    group: '',
    version: 'v1',
    plural: 'nodes',
    kind: 'Node',
    namespaced: false,
    shortNames: ['no'],
    subresources: ['status'],
    hasStatus: true,
    fields: { 'spec.unschedulable': (o) => str(path(o, 'spec', 'unschedulable')) ?? 'false' },
  }),
  def({
    group: '',
    version: 'v1',
    plural: 'pods',
    kind: 'Pod',
    shortNames: ['po'],
    categories: ['all'],
    subresources: ['status', 'log', 'eviction', 'binding'],
    hasStatus: true,
    returnsDeletedObject: true,
    fields: POD_FIELDS,
  }),
  def({ group: '', version: 'v1', plural: 'events', kind: 'Event', shortNames: ['ev'], fields: eventFields }),
  def({
    group: '',
    version: 'v1',
    plural: 'secrets',
    kind: 'Secret',
    fields: { type: (o) => str(o['type']) },
  }),
  def({
    group: '',
    version: 'v1',
    plural: 'resourcequotas',
    kind: 'ResourceQuota',
    shortNames: ['quota'],
    subresources: ['status'],
    hasStatus: true,
  }),
  def({ group: '', version: 'v1', plural: 'configmaps', kind: 'ConfigMap', shortNames: ['cm'] }),
  def({
    group: '',
    version: 'v1',
    plural: 'services',
    kind: 'Service',
    shortNames: ['svc'],
    categories: ['all'],
    subresources: ['status'],
    hasStatus: true,
    nameRule: 'label',
  }),
  def({ group: '', version: 'v1', plural: 'serviceaccounts', kind: 'ServiceAccount', shortNames: ['sa'] }),
  def({
    group: '',
    version: 'v1',
    plural: 'persistentvolumeclaims',
    kind: 'PersistentVolumeClaim',
    shortNames: ['pvc'],
    subresources: ['status'],
    hasStatus: true,
  }),
  // apps/v1
  def({
    group: 'apps',
    version: 'v1',
    plural: 'deployments',
    kind: 'Deployment',
    shortNames: ['deploy'],
    categories: ['all'],
    subresources: ['status', 'scale'],
    hasStatus: true,
  }),
  def({
    group: 'apps',
    version: 'v1',
    plural: 'replicasets',
    kind: 'ReplicaSet',
    shortNames: ['rs'],
    categories: ['all'],
    subresources: ['status', 'scale'],
    hasStatus: true,
  }),
  def({
    group: 'apps',
    version: 'v1',
    plural: 'statefulsets',
    kind: 'StatefulSet',
    shortNames: ['sts'],
    categories: ['all'],
    subresources: ['status', 'scale'],
    hasStatus: true,
  }),
  def({ group: 'apps', version: 'v1', plural: 'controllerrevisions', kind: 'ControllerRevision' }),
  // batch/v1
  def({
    group: 'batch',
    version: 'v1',
    plural: 'jobs',
    kind: 'Job',
    categories: ['all'],
    subresources: ['status'],
    hasStatus: true,
    defaultPropagation: 'Orphan',
    fields: {
      'status.successful': (o) => str(path(o, 'status', 'succeeded')) ?? '0',
    },
  }),
  // policy/v1
  def({
    group: 'policy',
    version: 'v1',
    plural: 'poddisruptionbudgets',
    kind: 'PodDisruptionBudget',
    shortNames: ['pdb'],
    subresources: ['status'],
    hasStatus: true,
  }),
  // coordination.k8s.io/v1
  def({ group: 'coordination.k8s.io', version: 'v1', plural: 'leases', kind: 'Lease' }),
  // what the project's own manifests (k8s/) declare besides the above
  def({ group: 'rbac.authorization.k8s.io', version: 'v1', plural: 'roles', kind: 'Role' }),
  def({ group: 'rbac.authorization.k8s.io', version: 'v1', plural: 'rolebindings', kind: 'RoleBinding' }),
  def({
    group: 'networking.k8s.io',
    version: 'v1',
    plural: 'networkpolicies',
    kind: 'NetworkPolicy',
    shortNames: ['netpol'],
  }),
  def({
    group: 'autoscaling',
    version: 'v2',
    plural: 'horizontalpodautoscalers',
    kind: 'HorizontalPodAutoscaler',
    shortNames: ['hpa'],
    categories: ['all'],
    subresources: ['status'],
    hasStatus: true,
  }),
];

export class ResourceRegistry {
  private readonly byPath = new Map<string, ResourceType>();
  private readonly byKind = new Map<string, ResourceType>();

  constructor(readonly types: readonly ResourceType[] = RESOURCE_TYPES) {
    for (const t of types) {
      this.byPath.set(`${apiVersionOf(t)}/${t.plural}`, t);
      this.byKind.set(`${apiVersionOf(t)}/${t.kind}`, t);
    }
  }

  /** Finds a type by its URL position: group '' for core. */
  find(group: string, version: string, plural: string): ResourceType | undefined {
    return this.byPath.get(`${group ? `${group}/${version}` : version}/${plural}`);
  }

  /** Finds a type by an object's apiVersion and kind. */
  forKind(apiVersion: string, kind: string): ResourceType | undefined {
    return this.byKind.get(`${apiVersion}/${kind}`);
  }

  get(group: string, plural: string): ResourceType {
    const t = this.types.find((x) => x.group === group && x.plural === plural);
    if (!t) throw new Error(`unknown resource ${plural}.${group}`);
    return t;
  }

  /** group → versions served, for discovery. */
  groups(): Map<string, string[]> {
    const m = new Map<string, string[]>();
    for (const t of this.types) {
      const vs = m.get(t.group) ?? [];
      if (!vs.includes(t.version)) vs.push(t.version);
      m.set(t.group, vs);
    }
    return m;
  }
}
