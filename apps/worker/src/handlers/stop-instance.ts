/**
 * stop-instance: restarts one instance by deleting its pod; the Deployment replaces it and the new pod
 * takes the freed index. Only a pod that still carries the LRP's labels is deleted, so a stale job can
 * never touch another app's pod; an absent pod is success.
 */
import { lrpSelectorString } from '@opi/translation';
import type { HandlerDeps } from '../deps.js';
import type { InstanceStopped, Skipped } from './outcome.js';

export async function stopInstance(
  deps: HandlerDeps,
  processGuid: string,
  podName: string,
): Promise<Skipped | InstanceStopped> {
  const record = await deps.store.get(processGuid);
  if (record?.state !== 'desired') return { kind: 'skipped', why: 'lrp no longer desired' };
  const { lrp } = record;
  const pods = await deps.kube.listPods(lrp.namespace, lrpSelectorString(lrp.guid, lrp.version));
  const pod = pods.items.find((p) => p.metadata.name === podName);
  if (!pod) return { kind: 'instance-stopped', pod: podName, result: 'already gone' };
  const result = await deps.kube.deletePod(lrp.namespace, podName);
  return { kind: 'instance-stopped', pod: podName, result };
}
