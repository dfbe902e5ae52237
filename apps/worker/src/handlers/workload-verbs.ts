/** One kind's verbs, so the converge and the sync read and write the same whichever kind an LRP runs as. */
import type { DesiredLrp, WorkloadKind } from '@opi/domain';
import type { KubernetesPort, Stored } from '@opi/kube';
import { type Deployment, type StatefulSet, lrpToDeployment, lrpToStatefulSet } from '@opi/translation';
import type { HandlerDeps } from '../deps.js';

export type Workload = Deployment | StatefulSet;

export interface WorkloadVerbs {
  kind: WorkloadKind;
  get(ns: string, name: string): Promise<Stored<Workload> | undefined>;
  create(ns: string, w: Workload): Promise<Stored<Workload>>;
  replace(ns: string, w: Workload): Promise<Stored<Workload>>;
  remove(ns: string, name: string): Promise<unknown>;
  list(ns: string | undefined, selector: string): Promise<{ items: Stored<Workload>[] }>;
  build(lrp: DesiredLrp, deps: Pick<HandlerDeps, 'runAsNonRoot' | 'instanceIndexEnv'>): Workload;
}

export function workloadVerbs(kube: KubernetesPort, kind: WorkloadKind): WorkloadVerbs {
  if (kind === 'deployment') {
    return {
      kind,
      get: (ns, name) => kube.getDeployment(ns, name),
      create: (ns, w) => kube.createDeployment(ns, w as Deployment),
      replace: (ns, w) => kube.replaceDeployment(ns, w as Deployment),
      remove: (ns, name) => kube.deleteDeployment(ns, name),
      list: (ns, selector) => kube.listDeployments(ns, selector),
      build: (lrp, deps) => lrpToDeployment(lrp, { runAsNonRoot: deps.runAsNonRoot }),
    };
  }
  return {
    kind,
    get: (ns, name) => kube.getStatefulSet(ns, name),
    create: (ns, w) => kube.createStatefulSet(ns, w as StatefulSet),
    replace: (ns, w) => kube.replaceStatefulSet(ns, w as StatefulSet),
    remove: (ns, name) => kube.deleteStatefulSet(ns, name),
    list: (ns, selector) => kube.listStatefulSets(ns, selector),
    build: (lrp, deps) =>
      lrpToStatefulSet(lrp, {
        runAsNonRoot: deps.runAsNonRoot,
        instanceIndexEnv: deps.instanceIndexEnv ?? true,
      }),
  };
}

export const OTHER_KIND: Record<WorkloadKind, WorkloadKind> = {
  deployment: 'statefulset',
  statefulset: 'deployment',
};
