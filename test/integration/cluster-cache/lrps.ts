/**
 * An LRP's pods as the cluster, the instances cache and /instances show them: desiring one, reading each,
 * waiting for them to agree, and replacing a pod.
 */
import type { V1Pod } from '@kubernetes/client-node';
import { type CachedInstances, keys } from '@opi/state';
import { lrpSelectorString } from '@opi/translation';
import { desireBody, uuid } from '@opi/contract/testing';
import { NAMESPACE, WORKLOAD_KIND, type Service, call, eventually } from '../../support/service.js';

export interface Lrp {
  guid: string;
  version: string;
  pg: string;
}

export function lrp(n: number, salt: string): Lrp {
  const guid = uuid(n, salt);
  const version = uuid(n, 'v1');
  return { guid, version, pg: `${guid}-${version}` };
}

export async function desire(s: Service, a: Lrp, extra: Record<string, unknown> = {}): Promise<void> {
  const r = await call(s.base, 'PUT', `/apps/${a.pg}`, desireBody(a.guid, a.version, extra));
  expect(r.status).toBe(202);
}

export interface InstanceRow {
  index: number;
  since: number;
  state: string;
}

export async function instances(s: Service, a: Lrp): Promise<InstanceRow[]> {
  const r = await call(s.base, 'GET', `/apps/${a.guid}/${a.version}/instances`);
  if (r.status !== 200) return [];
  return (JSON.parse(r.text) as { instances: InstanceRow[] }).instances;
}

/** The LRP's entry in the Redis instances cache (what /instances answers from), with pod names. */
export async function cacheEntry(s: Service, a: Lrp): Promise<CachedInstances | undefined> {
  const v = await s.redis.hget(keys(s.settings.queuePrefix).instances, a.pg);
  return v === null ? undefined : (JSON.parse(v) as CachedInstances);
}

/** The LRP's live pods in the cluster (not terminating). */
export async function livePods(s: Service, a: Lrp): Promise<V1Pod[]> {
  const list = await s.core.listNamespacedPod({
    namespace: NAMESPACE,
    labelSelector: lrpSelectorString(a.guid, a.version),
  });
  return list.items.filter((p) => !p.metadata?.deletionTimestamp);
}

/**
 * The cache entry once it shows `n` RUNNING instances at indexes 0..n-1, exactly the LRP's live pods, and
 * /instances agrees.
 */
export async function settledEntry(
  s: Service,
  a: Lrp,
  n: number,
  timeoutMs = 30_000,
): Promise<CachedInstances> {
  return eventually(
    async () => {
      const entry = await cacheEntry(s, a);
      if (!entry || entry.instances.length !== n) return undefined;
      if (!entry.instances.every((i) => i.state === 'RUNNING')) return undefined;
      const indexes = entry.instances.map((i) => i.index).sort((x, y) => x - y);
      if (indexes.join() !== [...Array(n).keys()].join()) return undefined;
      const pods = (await livePods(s, a)).map((p) => p.metadata?.name ?? '').sort();
      if (
        entry.instances
          .map((i) => i.podName)
          .sort()
          .join() !== pods.join()
      )
        return undefined;
      const rows = await instances(s, a);
      if (rows.length !== n || !rows.every((r) => r.state === 'RUNNING')) return undefined;
      return entry;
    },
    `${a.pg}: ${n} RUNNING instances in the cache, matching the cluster`,
    timeoutMs,
  );
}

export function podAt(entry: CachedInstances, index: number): string {
  const row = entry.instances.find((i) => i.index === index);
  if (!row) throw new Error(`no instance at index ${index}`);
  return row.podName;
}

/**
 * Deletes the pod and waits for its replacement in the settled cache entry: a new name from a Deployment,
 * the same name (and index) with a new uid from a StatefulSet.
 */
export async function replacePod(s: Service, a: Lrp, n: number, gone: string): Promise<CachedInstances> {
  const uid = (await livePods(s, a)).find((p) => p.metadata?.name === gone)?.metadata?.uid;
  await s.core.deleteNamespacedPod({ namespace: NAMESPACE, name: gone });
  return eventually(async () => {
    const e = await settledEntry(s, a, n);
    if (WORKLOAD_KIND === 'deployment') return e.instances.some((i) => i.podName === gone) ? undefined : e;
    const back = (await livePods(s, a)).find((p) => p.metadata?.name === gone);
    return back && back.metadata?.uid !== uid ? e : undefined;
  }, 'the replacement pod in the cache');
}
