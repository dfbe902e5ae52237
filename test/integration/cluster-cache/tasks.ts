/** The service's tasks as CC lists them (GET /tasks) and as Jobs in the cluster. */
import { BatchV1Api, KubeConfig } from '@kubernetes/client-node';
import { NAMESPACE, type Service, call } from '../../support/service.js';

const MANAGED = 'app.kubernetes.io/managed-by=opi-server';

/** The service's task and staging Jobs. */
export async function jobs(s: Service) {
  const kc = new KubeConfig();
  kc.loadFromString(s.sim.kubeconfig());
  return (
    await kc.makeApiClient(BatchV1Api).listNamespacedJob({ namespace: NAMESPACE, labelSelector: MANAGED })
  ).items;
}

export async function taskGuids(s: Service): Promise<string[]> {
  const r = await call(s.base, 'GET', '/tasks');
  return r.status === 200 ? (JSON.parse(r.text) as { guid: string }[]).map((t) => t.guid) : [];
}
