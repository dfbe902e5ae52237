import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import { StatusError } from '../errors.js';
import type { KubeObject } from '../types.js';
import type { Container, ContainerStatus } from './pods.js';
import { logText } from './container-logs.js';
import { goDuration, normalizeImage } from './runtime.js';
import {
  type Harness,
  container,
  env,
  eventually,
  isPodReady,
  startHarness,
  status,
} from './test-harness.js';

let h: Harness;
beforeEach(async () => {
  h = await startHarness();
});
afterEach(async () => {
  await h.stop();
});

function createPod(name: string, containers: Container[], spec: Record<string, unknown> = {}): KubeObject {
  return h.create('', 'pods', {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name },
    spec: { containers, ...spec },
  });
}

const pod = (name: string) => h.get('', 'pods', name);
const cstatus = (name: string, i = 0): ContainerStatus | undefined =>
  status(pod(name)).containerStatuses?.[i];
const eventLines = (name: string) =>
  h.events(name).map((e) => `${String(e['type'])} ${String(e['reason'])}: ${String(e['message'])}`);

function thrown(fn: () => unknown): StatusError {
  try {
    fn();
  } catch (err) {
    if (err instanceof StatusError) return err;
    throw err;
  }
  throw new Error('expected a StatusError');
}

describe('kubelet', () => {
  it('takes a pod through scheduling, pulling, starting and readiness', async () => {
    createPod('plain', [container()]);
    const p = await eventually(() => {
      const cur = pod('plain');
      return cur && isPodReady(cur) ? cur : false;
    }, 'pod ready');
    const s = status(p);
    expect(s.phase).toBe('Running');
    expect(s.startTime).toBeDefined();
    expect(s.qosClass).toBe('BestEffort');
    expect(s.podIPs).toEqual([{ ip: s.podIP }]);
    const byType = Object.fromEntries((s.conditions ?? []).map((c) => [c.type, c.status]));
    expect(byType).toEqual({
      PodReadyToStartContainers: 'True',
      Initialized: 'True',
      Ready: 'True',
      ContainersReady: 'True',
      PodScheduled: 'True',
    });
    const node = (p['spec'] as { nodeName: string }).nodeName;
    expect(node).toMatch(/^kubesim-node-\d$/);
    const lines = eventLines('plain');
    expect(lines).toEqual(
      expect.arrayContaining([
        `Normal Scheduled: Successfully assigned test/plain to ${node}`,
        'Normal Pulling: Pulling image "nginx:1.25"',
        'Normal Created: Created container app',
        'Normal Started: Started container app',
      ]),
    );
    expect(lines.some((l) => l.startsWith('Normal Pulled: Successfully pulled image "nginx:1.25" in '))).toBe(
      true,
    );
    const started = h.events('plain').find((e) => e['reason'] === 'Started')!;
    expect(started['involvedObject']).toMatchObject({
      kind: 'Pod',
      name: 'plain',
      namespace: 'test',
      fieldPath: 'spec.containers{app}',
    });
    expect(started['source']).toEqual({ component: 'kubelet', host: node });
    expect(started.metadata.name).toMatch(/^plain\.[0-9a-f]{16}$/);
    // Event names carry increasing timestamps: the pod's story starts with its scheduling.
    const inOrder = [...h.events('plain')].sort((a, b) => (a.metadata.name < b.metadata.name ? -1 : 1));
    expect(inOrder.map((e) => e['reason'])).toEqual(['Scheduled', 'Pulling', 'Pulled', 'Created', 'Started']);
  });

  it('reports a not-ready pod with ContainersNotReady', async () => {
    createPod('lazy', [container({ env: env({ KUBESIM_BEHAVIOUR: 'never-ready' }) })]);
    createPod('eager', [container()]);
    // Once a pod started at the same time is ready, the never-ready one is running but still not ready.
    await eventually(
      () => isPodReady(pod('eager')!) && status(pod('lazy')).phase === 'Running',
      'both running',
    );
    const s = status(pod('lazy'));
    expect(s.conditions?.find((c) => c.type === 'Ready')).toMatchObject({
      status: 'False',
      reason: 'ContainersNotReady',
      message: 'containers with unready status: [app]',
    });
    expect(cstatus('lazy')).toMatchObject({ ready: false, started: true });
  });

  it('kills a container whose startup probe never passes as the kubelet does, and restarts it', async () => {
    const probe = { tcpSocket: { port: 8080 }, periodSeconds: 2, failureThreshold: 30 };
    createPod('unhealthy', [
      container({
        env: env({ KUBESIM_BEHAVIOUR: 'never-healthy' }),
        startupProbe: probe,
        livenessProbe: probe,
      }),
    ]);
    const cs = await eventually(() => {
      const c = cstatus('unhealthy');
      return c && c.restartCount >= 1 ? c : false;
    }, 'the probe kill');
    expect(cs.ready).toBe(false);
    expect(cs.lastState.terminated).toMatchObject({ exitCode: 137, reason: 'Error' });
    const ip = String(status(pod('unhealthy')).podIP);
    expect(eventLines('unhealthy')).toEqual(
      expect.arrayContaining([
        `Warning Unhealthy: Startup probe failed: dial tcp ${ip}:8080: connect: connection refused`,
        'Normal Killing: Container app failed startup probe, will be restarted',
      ]),
    );
  });

  it('leaves a never-healthy container without probes running and unready', async () => {
    createPod('unprobed', [
      container({ env: env({ KUBESIM_BEHAVIOUR: 'never-healthy', KUBESIM_RUN_MS: '50' }) }),
    ]);
    createPod('eager2', [container()]);
    await eventually(() => isPodReady(pod('eager2')!), 'the other pod ready');
    await new Promise((r) => setTimeout(r, 100));
    expect(cstatus('unprobed')).toMatchObject({ ready: false, restartCount: 0 });
    expect(eventLines('unprobed').some((l) => l.includes('Killing'))).toBe(false);
  });

  it('crash-loops a crashing container with rising restartCount and CrashLoopBackOff', async () => {
    createPod('crashy', [container({ env: env({ KUBESIM_BEHAVIOUR: 'crash', KUBESIM_EXIT_CODE: '3' }) })]);
    const cs = await eventually(() => {
      const c = cstatus('crashy');
      return c && c.restartCount >= 2 && c.state.waiting?.reason === 'CrashLoopBackOff' ? c : false;
    }, 'second crash');
    const p = pod('crashy')!;
    expect(status(p).phase).toBe('Running');
    expect(cs.ready).toBe(false);
    expect(cs.state.waiting?.message).toMatch(
      new RegExp(`^back-off \\S+ restarting failed container=app pod=crashy_test\\(${p.metadata.uid}\\)$`),
    );
    expect(cs.lastState.terminated).toMatchObject({ exitCode: 3, reason: 'Error' });
    expect(cs.lastState.terminated?.startedAt).toBeDefined();
    expect(cs.lastState.terminated?.finishedAt).toBeDefined();
    const backoff = h.events('crashy').find((e) => e['reason'] === 'BackOff')!;
    expect(backoff['type']).toBe('Warning');
    expect(String(backoff['message'])).toMatch(
      /^Back-off restarting failed container app in pod crashy_test/,
    );
    // The same event repeats as a count, not as new Events.
    await eventually(
      () => Number(h.events('crashy').find((e) => e['reason'] === 'BackOff')?.['count']) >= 2,
      'BackOff count',
    );
    expect(h.events('crashy').filter((e) => e['reason'] === 'BackOff')).toHaveLength(1);
    expect(status(p).conditions?.find((c) => c.type === 'Ready')?.status).toBe('False');
  });

  it('OOM-kills with exit code 137 and reason OOMKilled', async () => {
    createPod('hungry', [container({ env: env({ KUBESIM_BEHAVIOUR: 'oom' }) })]);
    const cs = await eventually(() => {
      const c = cstatus('hungry');
      return c?.lastState.terminated ? c : false;
    }, 'OOM kill');
    expect(cs.lastState.terminated).toMatchObject({ exitCode: 137, reason: 'OOMKilled' });
    expect(cs.restartCount).toBeGreaterThanOrEqual(1);
  });

  it('fails a Never pod with the exit code and termination message', async () => {
    createPod(
      'failing',
      [
        container({
          env: env({
            KUBESIM_BEHAVIOUR: 'fail',
            KUBESIM_EXIT_CODE: '42',
            KUBESIM_TERMINATION_MESSAGE: 'staging failed: no buildpack',
          }),
        }),
      ],
      { restartPolicy: 'Never' },
    );
    const p = await eventually(() => {
      const cur = pod('failing');
      return status(cur).phase === 'Failed' ? cur : false;
    }, 'pod failed');
    const cs = status(p).containerStatuses?.[0];
    expect(cs?.state.terminated).toMatchObject({
      exitCode: 42,
      reason: 'Error',
      message: 'staging failed: no buildpack',
    });
    expect(cs?.restartCount).toBe(0);
    expect(status(p).conditions?.find((c) => c.type === 'Ready')).toMatchObject({
      status: 'False',
      reason: 'PodFailed',
    });
  });

  it('completes a Never pod with exit code 0', async () => {
    createPod('task', [container({ env: env({ KUBESIM_TERMINATION_MESSAGE: 'done' }) })], {
      restartPolicy: 'Never',
    });
    const p = await eventually(() => {
      const cur = pod('task');
      return status(cur).phase === 'Succeeded' ? cur : false;
    }, 'pod succeeded');
    const cs = status(p).containerStatuses?.[0];
    expect(cs?.state.terminated).toMatchObject({ exitCode: 0, reason: 'Completed', message: 'done' });
    expect(cs?.ready).toBe(false);
    expect(status(p).conditions?.find((c) => c.type === 'Ready')).toMatchObject({
      status: 'False',
      reason: 'PodCompleted',
    });
  });

  it('uses the log tail as termination message with FallbackToLogsOnError', async () => {
    createPod(
      'fallback',
      [
        container({
          terminationMessagePolicy: 'FallbackToLogsOnError',
          env: env({ KUBESIM_BEHAVIOUR: 'fail', KUBESIM_LOG: 'boom: out of cheese' }),
        }),
      ],
      { restartPolicy: 'Never' },
    );
    await eventually(() => status(pod('fallback')).phase === 'Failed', 'pod failed');
    expect(cstatus('fallback')?.state.terminated?.message).toContain('boom: out of cheese');
  });

  it('backs off pulling an image that does not exist, and never runs it', async () => {
    const image = 'registry.example.com/team/kubesim-pull-error-app:1.0';
    createPod('nopull', [container({ image })]);
    const reasons = new Set<string>();
    const seen = h.record();
    await eventually(() => {
      const r = cstatus('nopull')?.state.waiting?.reason;
      if (r) reasons.add(r);
      for (const e of seen) {
        if (e.object.metadata.name !== 'nopull') continue;
        const w = status(e.object).containerStatuses?.[0]?.state.waiting?.reason;
        if (w) reasons.add(w);
      }
      return reasons.has('ErrImagePull') && reasons.has('ImagePullBackOff');
    }, 'ErrImagePull and ImagePullBackOff');
    await eventually(
      () => eventLines('nopull').some((l) => l.startsWith('Normal BackOff: Back-off pulling image')),
      'BackOff event',
    );
    const lines = eventLines('nopull');
    expect(
      lines.some(
        (l) => l.startsWith(`Warning Failed: Failed to pull image "${image}": `) && l.endsWith('not found'),
      ),
    ).toBe(true);
    expect(lines).toContain('Warning Failed: Error: ErrImagePull');
    expect(status(pod('nopull')).phase).toBe('Pending');
    expect(cstatus('nopull')?.started).toBe(false);
    expect(
      seen.some(
        (e) => e.object.metadata.name === 'nopull' && status(e.object).containerStatuses?.[0]?.state.running,
      ),
    ).toBe(false);
  });

  it('stops and removes a pod deleted gracefully', async () => {
    createPod('bye', [container()]);
    await eventually(() => isPodReady(pod('bye')!), 'ready');
    const { object, removed } = h.store.delete(h.type('', 'pods'), h.namespace, 'bye');
    expect(removed).toBe(false);
    expect(object.metadata.deletionTimestamp).toBeDefined();
    await eventually(() => !pod('bye'), 'pod removed');
    expect(eventLines('bye')).toContain('Normal Killing: Stopping container app');
  });

  it('runs init containers first', async () => {
    const seen = h.record();
    createPod('staged', [container()], { initContainers: [container({ name: 'setup', image: 'busybox' })] });
    const p = await eventually(() => {
      const cur = pod('staged');
      return cur && isPodReady(cur) ? cur : false;
    }, 'ready');
    expect(status(p).initContainerStatuses?.[0]?.state.terminated).toMatchObject({
      exitCode: 0,
      reason: 'Completed',
    });
    const initializing = seen.find(
      (e) =>
        e.object.metadata.name === 'staged' &&
        status(e.object).containerStatuses?.[0]?.state.waiting?.reason === 'PodInitializing',
    );
    expect(status(initializing?.object).conditions?.find((c) => c.type === 'Initialized')).toMatchObject({
      status: 'False',
      reason: 'ContainersNotInitialized',
      message: 'containers with incomplete status: [setup]',
    });
    expect(status(initializing?.object).phase).toBe('Pending');
    const started = h.events('staged').filter((e) => e['reason'] === 'Started');
    expect(started.map((e) => (e['involvedObject'] as { fieldPath: string }).fieldPath)).toEqual([
      'spec.initContainers{setup}',
      'spec.containers{app}',
    ]);
  });

  it('serves logs, previous logs, and upstream errors', async () => {
    createPod('talker', [
      container({
        env: env({ KUBESIM_BEHAVIOUR: 'crash', KUBESIM_LOG: 'hello\nworld', KUBESIM_RUN_MS: '30' }),
      }),
    ]);
    await eventually(
      () => (cstatus('talker')?.restartCount ?? 0) >= 1 && cstatus('talker')?.state.running,
      'restarted and running',
    );
    const req = { namespace: 'test', name: 'talker', previous: false };
    const current = logText(h.controllers.logs(req));
    expect(current).toContain('hello\nworld\n');
    const previous = logText(h.controllers.logs({ ...req, previous: true }));
    expect(previous).toContain('hello\nworld\n');
    expect(previous).toMatch(/exited with code 1/);

    const bad = thrown(() => h.controllers.logs({ ...req, container: 'nope' }));
    expect(bad.code).toBe(400);
    expect(bad.message).toBe('container nope is not valid for pod talker');
    const missing = thrown(() => h.controllers.logs({ ...req, name: 'ghost' }));
    expect(missing.code).toBe(404);
    expect(missing.message).toBe('pods "ghost" not found');
  });

  it('gives every pod its own IP inside its node range', async () => {
    for (let i = 0; i < 6; i++) createPod(`ip-${i}`, [container()]);
    const pods = await eventually(() => {
      const all = h.pods((p) => p.metadata.name.startsWith('ip-'));
      return all.length === 6 && all.every((p) => status(p).podIP) ? all : false;
    }, 'IPs');
    expect(new Set(pods.map((p) => status(p).podIP)).size).toBe(6);
  });

  it('formats back-off durations and image names as Go and containerd do', () => {
    expect(goDuration(100)).toBe('100ms');
    expect(goDuration(1600)).toBe('1.6s');
    expect(goDuration(20_000)).toBe('20s');
    expect(goDuration(80_000)).toBe('1m20s');
    expect(goDuration(300_000)).toBe('5m0s');
    expect(normalizeImage('nginx')).toBe('docker.io/library/nginx:latest');
    expect(normalizeImage('bitnami/redis:7')).toBe('docker.io/bitnami/redis:7');
    expect(normalizeImage('localhost:5000/app')).toBe('localhost:5000/app:latest');
    expect(normalizeImage('ghcr.io/o/app@sha256:abc')).toBe('ghcr.io/o/app@sha256:abc');
  });
});
