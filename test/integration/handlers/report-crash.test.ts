/**
 * report-crash words a kill by a failed health check as Diego does, from the pod's Events read through
 * the client-node adapter (decision 10), reads them only for a signal exit, and falls back to the exit's
 * words when they cannot be read. The stand-in CC fails the test on a body CC would refuse.
 */
import type { JobPayload } from '@opi/queue';
import { reportCrash } from '../../../apps/worker/src/handlers/crash.js';
import { type FakeCc, startFakeCc } from '../../support/fake-cc.js';
import { type Env, NS, handlerSuite, newLrp, seedPod } from '../../support/handler-deps.js';
import { at, pod } from '../../support/handler-sync.js';

const suite = handlerSuite('report-crash');

let cc: FakeCc;
beforeAll(async () => {
  cc = await startFakeCc();
});
afterAll(async () => {
  await cc.close();
});

const lrp = newLrp({ healthCheck: { type: 'port', timeoutMs: 60_000, httpEndpoint: '' }, ports: [8080] });
const NAME = 'crash-probe-0';

/** A pod whose app container was stopped with `exitCode` at t=70 s, after starting at t=10 s. */
function seedCrashedPod(e: Env, exitCode: number, reason = 'Error'): string {
  const p = pod(lrp, NAME, 0, 'running');
  const [status] = p.status?.containerStatuses ?? [];
  if (!status || !p.status) throw new Error('the pod fixture has no container status');
  p.status.containerStatuses = [
    {
      ...status,
      restartCount: 1,
      lastState: { terminated: { exitCode, reason, startedAt: at(10), finishedAt: at(70) } },
    },
  ];
  seedPod(e, p);
  const stored = e.sim.store.get(e.sim.store.registry.get('', 'pods'), NS, NAME);
  return stored?.metadata.uid ?? '';
}

function seedEvent(e: Env, uid: string, reason: string, message: string, seconds: number): void {
  e.sim.store.create(e.sim.store.registry.get('', 'events'), {
    apiVersion: 'v1',
    kind: 'Event',
    metadata: { name: `${NAME}.${reason.toLowerCase()}.${seconds}`, namespace: NS },
    involvedObject: { kind: 'Pod', name: NAME, namespace: NS, uid, fieldPath: 'spec.containers{opi}' },
    reason,
    message,
    type: reason === 'Killing' ? 'Normal' : 'Warning',
    source: { component: 'kubelet' },
    lastTimestamp: at(seconds),
  } as never);
}

function payload(uid: string, exitStatus: number): JobPayload<'reportCrash'> {
  return {
    processGuid: lrp.processGuid,
    instance: NAME,
    index: 0,
    reason: 'CRASHED',
    exitStatus,
    exitDescription: `APP/PROC/WEB: Exited with status ${exitStatus}`,
    crashCount: 1,
    crashTimestamp: Date.parse(at(70)) / 1000,
    podNamespace: NS,
    podUid: uid,
  };
}

function descriptions(): unknown[] {
  return cc
    .callsTo(`/internal/v4/apps/${lrp.processGuid}/crashed`)
    .map((c) => (c.body as { exit_description?: unknown }).exit_description);
}

function eventLists(e: Env): number {
  return e.calls.filter((c) => c.resource === 'events').length;
}

describe('report-crash: a failed health check in Diego words', () => {
  beforeEach(() => {
    cc.reset();
  });

  it('says a startup probe that never passed as Diego says it', async () => {
    const e = await suite.newEnv();
    const uid = seedCrashedPod(e, 137);
    seedEvent(
      e,
      uid,
      'Unhealthy',
      'Startup probe failed: dial tcp 127.0.0.5:8080: connect: connection refused',
      68,
    );
    seedEvent(e, uid, 'Killing', 'Container opi failed startup probe, will be restarted', 69);
    const result = await reportCrash({ ...e.deps, ccInternalUrl: cc.url }, payload(uid, 137));
    expect(result.kind).toBe('delivered');
    expect(descriptions()).toEqual([
      'APP/PROC/WEB: Instance never healthy after 1m0s: Failed to make TCP connection to port 8080: connection refused',
    ]);
  });

  it('reads no Events for an exit of the app itself', async () => {
    const e = await suite.newEnv();
    const uid = seedCrashedPod(e, 1);
    const before = eventLists(e);
    await reportCrash({ ...e.deps, ccInternalUrl: cc.url }, payload(uid, 1));
    expect(eventLists(e)).toBe(before);
    expect(descriptions()).toEqual(['APP/PROC/WEB: Exited with status 1']);
  });

  it('words a signal exit as an exit when the Events cannot be read', async () => {
    const e = await suite.newEnv();
    const uid = seedCrashedPod(e, 137);
    seedEvent(e, uid, 'Killing', 'Container opi failed startup probe, will be restarted', 69);
    e.kube.faults.inject({ resource: 'events', verb: 'list' });
    const result = await reportCrash({ ...e.deps, ccInternalUrl: cc.url }, payload(uid, 137));
    expect(result.kind).toBe('delivered');
    expect(descriptions()).toEqual(['APP/PROC/WEB: Exited with status 137']);
  });
});
