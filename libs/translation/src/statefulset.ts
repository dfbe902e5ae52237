/**
 * The StatefulSet (apps/v1) that runs a desired LRP in the StatefulSet mode: pods `<name>-<ordinal>`, so
 * each instance knows its index, as on Diego. Pods start and stop all at once (`Parallel`), not one by
 * one, and a new template rolls out as a Deployment's would, a quarter at a time where the cluster
 * honours `maxUnavailable` (one at a time where it does not).
 */
import type { DesiredLrp } from '@opi/domain';
import { type DeploymentSettings, podTemplateFor, workloadMeta } from './deployment.js';
import type { StatefulSet, StatefulSetSpec } from '@opi/kube-objects';
import { selectorFor } from './labels.js';

export interface StatefulSetSettings extends DeploymentSettings {
  /**
   * CF_INSTANCE_INDEX and INSTANCE_INDEX from the pod's `apps.kubernetes.io/pod-index` label, which
   * Kubernetes sets from 1.28 on; off for an older cluster (OPI_INSTANCE_INDEX_ENV=off).
   */
  instanceIndexEnv: boolean;
}

export function lrpToStatefulSet(
  lrp: DesiredLrp,
  settings: StatefulSetSettings,
): StatefulSet & { spec: StatefulSetSpec } {
  return {
    apiVersion: 'apps/v1',
    kind: 'StatefulSet',
    metadata: workloadMeta(lrp),
    spec: {
      replicas: lrp.instances,
      selector: selectorFor(lrp),
      serviceName: '',
      podManagementPolicy: 'Parallel',
      updateStrategy: { type: 'RollingUpdate', rollingUpdate: { maxUnavailable: '25%' } },
      revisionHistoryLimit: 2,
      template: podTemplateFor(lrp, {
        runAsNonRoot: settings.runAsNonRoot,
        index: settings.instanceIndexEnv,
      }),
    },
  };
}
