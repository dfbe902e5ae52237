/**
 * Pods a ResourceQuota refuses are visible where CC looks (decision 12): the workload is accepted, but a
 * quota of one pod lets one of three instances in. `/instances` shows it RUNNING and the other two
 * UNCLAIMED with the API server's quota message as placement_error (CC reports them down with it as
 * details); once the quota is raised all three run and the reason is gone. Run in both workload modes:
 * a Deployment says it in its ReplicaFailure condition, a StatefulSet only in FailedCreate Events.
 */
import { desireBody, uuid } from '@opi/contract/testing';
import { CcOpiClient, reportedInstances } from '../../support/cc-opi-client.js';
import { NAMESPACE, type Service, call, eventually, startService } from '../../support/service.js';

interface Instance {
  index: number;
  state: string;
  since: number;
  placement_error?: string;
}

async function instances(s: Service, guid: string, version: string): Promise<Instance[] | undefined> {
  const r = await call(s.base, 'GET', `/apps/${guid}/${version}/instances`);
  return r.status === 200 ? (JSON.parse(r.text) as { instances: Instance[] }).instances : undefined;
}

const QUOTA = 'compute';
const REFUSED =
  /^Kubernetes could not create the app's instances: pods "[a-z0-9-]+" is forbidden: exceeded quota: compute, requested: pods=1, used: pods=1, limited: pods=1$/;

describe('an app whose pods a ResourceQuota refuses', () => {
  let s: Service;
  beforeAll(async () => {
    s = await startService({ workers: 1 });
    await s.core.createNamespacedResourceQuota({
      namespace: NAMESPACE,
      body: { metadata: { name: QUOTA }, spec: { hard: { pods: '1' } } },
    });
  });
  afterAll(async () => {
    await s.close();
  });

  it('shows the quota on the unclaimed instances only, until the quota is raised', async () => {
    const [guid, version] = [uuid(1, 'quota'), uuid(1, 'v1')];
    const body = desireBody(guid, version, { instances: 3 });
    expect((await call(s.base, 'PUT', `/apps/${guid}-${version}`, body)).status).toBe(202);

    const shown = await eventually(async () => {
      const list = await instances(s, guid, version);
      const running = list?.filter((i) => i.state === 'RUNNING') ?? [];
      const refused = list?.filter((i) => i.state === 'UNCLAIMED' && i.placement_error) ?? [];
      return list?.length === 3 && running.length === 1 && refused.length === 2 ? list : undefined;
    }, 'one instance running and two refused in /instances');
    const running = shown.find((i) => i.state === 'RUNNING');
    expect(running?.placement_error).toBeUndefined();
    for (const i of shown.filter((x) => x.state === 'UNCLAIMED')) expect(i.placement_error).toMatch(REFUSED);

    // As CC reads and reports it: the running one up, the other two down with the reason as details.
    const cc = new CcOpiClient(s.base);
    const read = await cc.lrpInstances(
      { method: 'GET', path: `/apps/${guid}/${version}/instances` },
      { state: 'STARTED', instances: 3 },
    );
    const reported = reportedInstances(read.outcome, { state: 'STARTED', instances: 3 });
    const states = [...reported.values()];
    expect(states.filter((r) => r.state === 'RUNNING')).toHaveLength(1);
    const down = states.filter((r) => r.state === 'DOWN');
    expect(down).toHaveLength(2);
    for (const d of down) expect(d.details).toMatch(REFUSED);
    const metrics = await s.workers[0]!.metrics.registry.metrics();
    expect(metrics).toMatch(/opi_desire_refused_total\{reason="quota"\} 1\b/);

    const current = await s.core.readNamespacedResourceQuota({ namespace: NAMESPACE, name: QUOTA });
    await s.core.replaceNamespacedResourceQuota({
      namespace: NAMESPACE,
      name: QUOTA,
      body: { ...current, spec: { hard: { pods: '3' } } },
    });
    const all = await eventually(async () => {
      const list = await instances(s, guid, version);
      return list?.length === 3 && list.every((i) => i.state === 'RUNNING') ? list : undefined;
    }, 'all three running after the quota is raised');
    expect(all.filter((i) => i.placement_error !== undefined)).toEqual([]);
  });
});
