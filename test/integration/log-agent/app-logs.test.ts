/**
 * The log agent end to end: the simulated kubelet writes CRI log files, the agent tails them, finds each
 * pod's origin in Redis and the cluster, and a Loggregator v2 ingress in the test (mutual TLS, the real
 * protos) receives every line tagged as Diego tags it.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomUUID } from 'node:crypto';
import { buildpackLifecycle, desireBody, stagingBody, taskBody, uuid } from '@opi/contract/testing';
import { loadKubeConfig } from '@opi/kube';
import { createLogger } from '@opi/logging';
import { type RunningLogAgent, startLogAgent } from '../../../apps/log-agent/src/index.js';
import type { Settings } from '@opi/config';
import {
  type FakeIngress,
  type ReceivedEnvelope,
  startFakeIngress,
} from '../../support/loggregator-ingress.js';
import { haveOpenssl, makePki, type Pki } from '../../support/pki.js';
import { NAMESPACE, type Service, call, eventually, startService } from '../../support/service.js';

const maybe = haveOpenssl() ? describe : describe.skip;

maybe('the log agent', () => {
  let s: Service;
  let pki: Pki;
  let ingress: FakeIngress;
  let dir: string;
  let agent: RunningLogAgent;
  let agentSettings: Settings;

  const startAgent = () =>
    startLogAgent(
      agentSettings,
      createLogger({ level: 'silent', pretty: false }),
      loadKubeConfig({ kubeconfigYaml: s.sim.kubeconfig() }),
      {
        metricsServer: { port: 0, host: '127.0.0.1' },
        pollMs: 50,
        firstStart: 'head',
      },
    );
  const simCall = (path: string, body: object) =>
    fetch(`${s.sim.httpUrl}${path}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${s.sim.token}`, 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
  const logs = (pred: (e: ReceivedEnvelope) => boolean) => ingress.received.filter((e) => e.log && pred(e));
  const text = (e: ReceivedEnvelope) => e.log?.payload.toString() ?? '';
  const podsOf = async (selector: string) =>
    (await s.core.listNamespacedPod({ namespace: NAMESPACE, labelSelector: selector })).items;

  beforeAll(async () => {
    pki = makePki();
    ingress = await startFakeIngress(pki);
    dir = mkdtempSync(join(tmpdir(), 'opi-pod-logs-'));
    s = await startService({
      simBehaviour: { podLogFiles: { dir, maxBytes: 1024 * 1024, maxFiles: 3, retainMs: 2000 } },
    });
    agentSettings = {
      ...s.settings,
      loggregator: {
        address: { host: '127.0.0.1', port: ingress.port },
        tls: {
          caFile: pki.file('ca.crt'),
          certFile: pki.file('opi-worker.crt'),
          keyFile: pki.file('opi-worker.key'),
        },
        serverName: 'metron',
        maxBuffered: 100_000,
      },
      nodeLogs: { nodeName: undefined, dir, positionsFile: join(dir, 'positions.json') },
    };
    agent = await startAgent();
  });
  afterAll(async () => {
    await agent.close();
    await s.close();
    await ingress.stop();
  });

  it('ships an app’s two instances under the app guid, indexed as /instances shows, OUT and ERR apart', async () => {
    const guid = uuid(1, 'lg');
    const version = uuid(2, 'lg');
    const r = await call(
      s.base,
      'PUT',
      `/apps/${guid}-${version}`,
      desireBody(guid, version, {
        instances: 2,
        environment: { KUBESIM_LOG: 'hello from out', KUBESIM_LOG_ERR: 'hello from err' },
      }),
    );
    expect(r.status).toBe(202);
    const got = await eventually(async () => {
      const errs = logs((e) => e.source_id === guid && text(e) === 'hello from err');
      return errs.length === 2 ? errs : undefined;
    }, 'both instances’ stderr lines');
    expect(new Set(got.map((e) => e.instance_id))).toEqual(new Set(['0', '1']));
    for (const e of got) {
      expect(e.log?.type).toBe('ERR');
      expect(e.tags).toMatchObject({
        source_type: 'APP/PROC/WEB',
        app_id: guid,
        process_id: guid,
        process_type: 'web',
        space_name: 'dev',
      });
    }
    const outs = logs((e) => e.source_id === guid && text(e) === 'hello from out');
    expect(outs.map((e) => e.log?.type ?? 'OUT')).toEqual(['OUT', 'OUT']);
    // The instance ids are the indexes /instances shows for those pods.
    const inst = JSON.parse((await call(s.base, 'GET', `/apps/${guid}/${version}/instances`)).text) as {
      instances: { index: number }[];
    };
    expect(inst.instances.map((i) => String(i.index)).sort()).toEqual(['0', '1']);
  });

  it('tags a worker process APP/PROC/WORKER, still under the app guid', async () => {
    const appGuid = uuid(3, 'lg');
    const guid = uuid(4, 'lg');
    const version = uuid(5, 'lg');
    await call(
      s.base,
      'PUT',
      `/apps/${guid}-${version}`,
      desireBody(guid, version, {
        app_guid: appGuid,
        process_type: 'worker',
        environment: { KUBESIM_LOG: 'working' },
      }),
    );
    const [e] = await eventually(async () => {
      const found = logs((x) => text(x) === 'working' && x.tags?.['process_id'] === guid);
      return found.length ? found : undefined;
    }, 'the worker’s line');
    expect(e).toMatchObject({
      source_id: appGuid,
      instance_id: '0',
      tags: { source_type: 'APP/PROC/WORKER' },
    });
  });

  it('tags a task APP/TASK/<name>, instance 0', async () => {
    const taskGuid = randomUUID();
    const body = {
      ...taskBody('http://127.0.0.1:1', taskGuid, { KUBESIM_LOG: 'migrating', KUBESIM_RUN_MS: '2000' }),
      name: 'migrate',
    };
    expect((await call(s.base, 'POST', `/tasks/${taskGuid}`, body)).status).toBe(202);
    const [e] = await eventually(async () => {
      const found = logs((x) => text(x) === 'migrating');
      return found.length ? found : undefined;
    }, 'the task’s line');
    expect(e).toMatchObject({
      source_id: 'app-1',
      instance_id: '0',
      tags: { source_type: 'APP/TASK/migrate', app_name: 'app' },
    });
  });

  it('tags a buildpack staging’s output STG, instance 0', async () => {
    const g = uuid(8, 'lg');
    const body = stagingBody('http://127.0.0.1:1', g, buildpackLifecycle(), {
      KUBESIM_RUN_MS: '2000',
      KUBESIM_LOG: 'detecting buildpacks',
      KUBESIM_LOG_ERR: 'a warning',
    });
    expect((await call(s.base, 'POST', `/stage/${g}`, body)).status).toBe(202);
    const got = await eventually(async () => {
      const found = logs((x) => text(x) === 'detecting buildpacks' || text(x) === 'a warning');
      return found.length === 2 ? found : undefined;
    }, 'the staging’s lines');
    for (const e of got)
      expect(e).toMatchObject({ source_id: 'app-1', instance_id: '0', tags: { source_type: 'STG' } });
    expect(got.map((e) => e.log?.type ?? 'OUT')).toEqual(['OUT', 'ERR']);
  });

  it('keeps 1,000 lines written 1 ms apart in order with strictly increasing times, across an agent restart', async () => {
    const guid = uuid(6, 'lg');
    const version = uuid(7, 'lg');
    await call(
      s.base,
      'PUT',
      `/apps/${guid}-${version}`,
      desireBody(guid, version, { environment: { KUBESIM_LOG: 'ready' } }),
    );
    await eventually(
      async () => (logs((e) => e.source_id === guid).length ? true : undefined),
      'the app’s first line',
    );
    const [pod] = await podsOf(`cloudfoundry.org/guid=${guid}`);
    const name = pod?.metadata?.name ?? '';
    const lines = Array.from({ length: 1000 }, (_, i) => ({
      stream: i % 10 === 0 ? 'stderr' : 'stdout',
      text: `n ${i}`,
    }));
    expect((await simCall(`/sim/pods/${NAMESPACE}/${name}/log`, { lines, everyMs: 1 })).status).toBe(200);
    // Half-way, the agent is restarted: it resumes from its saved positions.
    await eventually(
      async () =>
        logs((e) => e.source_id === guid && text(e).startsWith('n ')).length >= 300 ? true : undefined,
      '300 lines',
    );
    await agent.close();
    agent = await startAgent();
    const got = await eventually(async () => {
      const found = logs((e) => e.source_id === guid && text(e).startsWith('n '));
      return found.length >= 1000 && found.some((e) => text(e) === 'n 999') ? found : undefined;
    }, 'all 1,000 lines');
    expect(got.map(text)).toEqual(lines.map((l) => l.text));
    expect(got.map((e) => e.log?.type ?? 'OUT')).toEqual(
      lines.map((l) => (l.stream === 'stderr' ? 'ERR' : 'OUT')),
    );
    const times = got.map((e) => BigInt(e.timestamp));
    for (let i = 1; i < times.length; i++) expect(times[i]! > times[i - 1]!).toBe(true);
  });
});
