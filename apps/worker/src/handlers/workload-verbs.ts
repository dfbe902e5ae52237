/** One kind's verbs, so the converge and the sync read and write the same whichever kind an LRP runs as. */
import type { DesiredLrp, WorkloadKind } from '@opi/domain';
import type { KubernetesPort, ResourceClient } from '@opi/kube';
import { lrpToDeployment, lrpToStatefulSet } from '@opi/translation';
import type { Deployment, StatefulSet } from '@opi/kube-objects';
import type { HandlerDeps } from '../deps.js';

export type Workload = Deployment | StatefulSet;

/** Both workload resources have these verbs on the port, over either kind's objects. */
type WorkloadClient = Pick<ResourceClient<Workload>, 'get' | 'create' | 'replace' | 'delete' | 'list'>;

export interface WorkloadVerbs extends WorkloadClient {
  kind: WorkloadKind;
  build(lrp: DesiredLrp, deps: Pick<HandlerDeps, 'runAsNonRoot' | 'instanceIndexEnv'>): Workload;
}

const BUILD: Record<WorkloadKind, WorkloadVerbs['build']> = {
  deployment: (lrp, deps) => lrpToDeployment(lrp, { runAsNonRoot: deps.runAsNonRoot }),
  statefulset: (lrp, deps) =>
    lrpToStatefulSet(lrp, {
      runAsNonRoot: deps.runAsNonRoot,
      instanceIndexEnv: deps.instanceIndexEnv ?? true,
    }),
};

export function workloadVerbs(kube: KubernetesPort, kind: WorkloadKind): WorkloadVerbs {
  // One client for either kind: the two resources' clients differ only in their object type.
  const client = (kind === 'deployment' ? kube.deployments : kube.statefulsets) as unknown as WorkloadClient;
  return {
    kind,
    get: (ns, name) => client.get(ns, name),
    create: (ns, w) => client.create(ns, w),
    replace: (ns, w) => client.replace(ns, w),
    delete: (ns, name) => client.delete(ns, name),
    list: (ns, selector, pageSize, select) => client.list(ns, selector, pageSize, select),
    build: BUILD[kind],
  };
}

export const OTHER_KIND: Record<WorkloadKind, WorkloadKind> = {
  deployment: 'statefulset',
  statefulset: 'deployment',
};
