/** The PodDisruptionBudget that keeps half of an LRP's instances up through node drains. */
import type { DesiredLrp } from '@opi/domain';
import type { PodDisruptionBudget } from '@opi/kube-objects';
import { labelsFor, selectorFor } from './labels.js';
import { workloadName } from './names.js';

/**
 * `minAvailable: 50%` over the LRP's pods, only when instances > 1: with one instance the budget would
 * either block every drain (minAvailable 1) or protect nothing, so none is made.
 */
export function pdbFor(lrp: DesiredLrp): PodDisruptionBudget | undefined {
  if (lrp.instances <= 1) return undefined;
  return {
    apiVersion: 'policy/v1',
    kind: 'PodDisruptionBudget',
    metadata: { name: workloadName(lrp), namespace: lrp.namespace, labels: labelsFor(lrp) },
    spec: { minAvailable: '50%', selector: selectorFor(lrp) },
  };
}
