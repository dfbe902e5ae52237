/**
 * stop-instance: restarts one instance by deleting its pod; the Deployment replaces it and the new pod
 * takes the freed index. Only a pod that still carries the LRP's labels is deleted, so a stale job can
 * never touch another app's pod; an absent pod is success. With routing on, gorouter is told first, so no
 * request is sent to the pod while it drains.
 */
import { lrpSelectorString, registrationsOf, routeSourceOfLrp } from '@opi/translation';
import type { HandlerDeps } from '../deps.js';
import type { InstanceStopped, Skipped } from './outcome.js';

export async function stopInstance(
  deps: HandlerDeps,
  processGuid: string,
  podName: string,
  index: number,
): Promise<Skipped | InstanceStopped> {
  const record = await deps.store.get(processGuid);
  if (record?.state !== 'desired') return { kind: 'skipped', why: 'lrp no longer desired' };
  const { lrp } = record;
  const pods = await deps.kube.pods.list(lrp.namespace, lrpSelectorString(lrp.guid, lrp.version));
  const pod = pods.items.find((p) => p.metadata.name === podName);
  if (!pod) return { kind: 'instance-stopped', pod: podName, result: 'already gone' };
  const source = deps.unroute && routeSourceOfLrp(lrp);
  const ip = pod.status?.podIP;
  if (source && ip && !pod.metadata.deletionTimestamp) {
    const instance = { ip, uid: pod.metadata.uid ?? '', index };
    await deps.unroute?.([...registrationsOf(source, [instance]).values()]);
  }
  const result = await deps.kube.pods.delete(lrp.namespace, podName);
  return { kind: 'instance-stopped', pod: podName, result };
}
