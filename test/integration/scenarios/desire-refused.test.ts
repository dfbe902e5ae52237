/**
 * A desire the cluster refuses for good is visible where CC looks (decision 7): an env var name
 * Kubernetes before 1.32 refuses goes through the API and a worker to the simulated cluster, and
 * `/instances` says why on every desired instance within 5 s; the metric counts it; CC's corrected new
 * version runs, and stopping the refused one clears its refusal. A cluster of 1.34 takes the same name.
 */
import { desireBody, uuid } from '@opi/contract/testing';
import { CcOpiClient, reportedInstances } from '../../support/cc-opi-client.js';
import { type Service, call, eventually, lrpWorkloads, startService } from '../../support/service.js';

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

const REFUSED =
  /^environment variable name "MY VAR" is not allowed by this cluster: a valid environment variable name must consist of alphabetic characters, digits, '_', '-', or '\.', and must not start with a digit/;

describe('on a cluster that refuses "MY VAR" (1.30)', () => {
  let s: Service;
  beforeAll(async () => {
    s = await startService({ workers: 1, simVersion: '1.30' });
  });
  afterAll(async () => {
    await s.close();
  });

  it('/instances names the refused variable on every instance, until CC moves on to a corrected version', async () => {
    const guid = uuid(1, 'refused');
    const [v1, v2] = [uuid(1, 'v1'), uuid(2, 'v2')];
    const bad = desireBody(guid, v1, { instances: 2, environment: { 'MY VAR': 'x', GREETING: 'hi' } });
    expect((await call(s.base, 'PUT', `/apps/${guid}-${v1}`, bad)).status).toBe(202);

    const shown = await eventually(
      async () => {
        const list = await instances(s, guid, v1);
        return list?.length === 2 && list.every((i) => i.placement_error) ? list : undefined;
      },
      'the refusal in /instances',
      5000,
    );
    for (const [n, i] of shown.entries()) {
      expect(i).toMatchObject({ index: n, state: 'UNCLAIMED', since: 0 });
      expect(i.placement_error).toMatch(REFUSED);
    }
    // As CC reads and reports it: every instance down, with the reason as its details (`cf app`).
    const cc = new CcOpiClient(s.base);
    const read = await cc.lrpInstances(
      { method: 'GET', path: `/apps/${guid}/${v1}/instances` },
      { state: 'STARTED', instances: 2 },
    );
    const reported = reportedInstances(read.outcome, { state: 'STARTED', instances: 2 });
    expect([...reported.values()]).toEqual([
      { state: 'DOWN', details: shown[0]?.placement_error },
      { state: 'DOWN', details: shown[1]?.placement_error },
    ]);
    const metrics = await s.workers[0]!.metrics.registry.metrics();
    expect(metrics).toMatch(/opi_desire_refused_total\{reason="invalid"\} [1-9]/);

    // CC's next version of the app, with the variable renamed; then CC stops the refused one.
    const good = desireBody(guid, v2, { instances: 2, environment: { MY_VAR: 'x', GREETING: 'hi' } });
    expect((await call(s.base, 'PUT', `/apps/${guid}-${v2}`, good)).status).toBe(202);
    const running = await eventually(async () => {
      const list = await instances(s, guid, v2);
      return list?.length === 2 && list.every((i) => i.state === 'RUNNING') ? list : undefined;
    }, 'the corrected version running');
    expect(running.some((i) => i.placement_error !== undefined)).toBe(false);

    expect((await call(s.base, 'PUT', `/apps/${guid}/${v1}/stop`)).status).toBe(200);
    const key = `${s.settings.queuePrefix}:state:refusal:${guid}-${v1}`;
    await eventually(async () => (await s.redis.exists(key)) === 0, 'the stop to clear the refusal');
    expect(await instances(s, guid, v1)).toBeUndefined();
  });
});

describe('on a cluster that takes "MY VAR" (1.34)', () => {
  let s: Service;
  beforeAll(async () => {
    s = await startService({ workers: 1, simVersion: '1.34' });
  });
  afterAll(async () => {
    await s.close();
  });

  it('the app runs with it, and /instances says nothing of a refusal', async () => {
    const [guid, version] = [uuid(2, 'relaxed'), uuid(1, 'v1')];
    const body = desireBody(guid, version, { environment: { 'MY VAR': 'x' } });
    expect((await call(s.base, 'PUT', `/apps/${guid}-${version}`, body)).status).toBe(202);
    const list = await eventually(async () => {
      const l = await instances(s, guid, version);
      return l?.[0]?.state === 'RUNNING' ? l : undefined;
    }, 'the app running');
    expect(list[0]?.placement_error).toBeUndefined();
    const [workload] = await lrpWorkloads(s, { guid, version });
    const env = workload?.spec?.template.spec?.containers[0]?.env ?? [];
    expect(env).toContainEqual({ name: 'MY VAR', value: 'x' });
  });
});
