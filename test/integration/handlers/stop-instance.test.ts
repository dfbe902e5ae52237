/** stop-instance, through the client-node adapter against the simulated cluster: one pod of one LRP. */
import type { RegistryMessage } from '@opi/translation';
import { stopInstance } from '../../../apps/worker/src/handlers/stop-instance.js';
import {
  desireAndConverge,
  handlerSuite,
  names,
  newLrp,
  removeTerminatedPods,
  seedPod,
} from '../../support/handler-deps.js';
import { pod } from '../../support/handler-sync.js';

const suite = handlerSuite('stop-instance');

describe('stop-instance', () => {
  it("deletes one instance's pod, and only a pod of that LRP", async () => {
    const e = await suite.newEnv();
    const lrp = newLrp();
    const other = newLrp({ appName: 'other' });
    await desireAndConverge(e, lrp);
    await desireAndConverge(e, other);
    seedPod(e, pod(lrp, 'web-0', 0, 'running'));
    seedPod(e, pod(lrp, 'web-1', 1, 'running'));
    seedPod(e, pod(other, 'other-0', 0, 'running'));

    await expect(stopInstance(e.deps, lrp.processGuid, 'web-1', 1)).resolves.toEqual({
      kind: 'instance-stopped',
      pod: 'web-1',
      result: 'deleted',
    });
    expect(names(e, 'pods')).toEqual(['other-0', 'web-0']);
    // The kubelet removes it once stopped. Again: already gone. Another app's pod: never touched.
    removeTerminatedPods(e);
    await expect(stopInstance(e.deps, lrp.processGuid, 'web-1', 1)).resolves.toEqual({
      kind: 'instance-stopped',
      pod: 'web-1',
      result: 'already gone',
    });
    await expect(stopInstance(e.deps, lrp.processGuid, 'other-0', 0)).resolves.toEqual({
      kind: 'instance-stopped',
      pod: 'other-0',
      result: 'already gone',
    });
    expect(names(e, 'pods')).toEqual(['other-0', 'web-0']);

    await e.store.stop(lrp.processGuid, lrp.guid, lrp.version);
    await expect(stopInstance(e.deps, lrp.processGuid, 'web-0', 0)).resolves.toEqual({
      kind: 'skipped',
      why: 'lrp no longer desired',
    });
    expect(names(e, 'pods')).toEqual(['other-0', 'web-0']);
  });

  it('unregisters the instance from gorouter before it deletes the pod, and not once it is terminating', async () => {
    const e = await suite.newEnv();
    const lrp = newLrp({
      routes: [{ hostname: 'hello.example.com' }, { hostname: 'admin.example.com', port: 9090 }],
    });
    await desireAndConverge(e, lrp);
    const running = pod(lrp, 'web-1', 1, 'running');
    seedPod(e, { ...running, status: { ...running.status, podIP: '127.9.0.2' } });
    const sent: { m: RegistryMessage; podsThen: string[] }[] = [];
    const deps = {
      ...e.deps,
      unroute: (messages: readonly string[]) => {
        for (const m of messages)
          sent.push({ m: JSON.parse(m) as RegistryMessage, podsThen: names(e, 'pods') });
        return Promise.resolve();
      },
    };

    await expect(stopInstance(deps, lrp.processGuid, 'web-1', 1)).resolves.toMatchObject({
      result: 'deleted',
    });
    expect(sent.map(({ m }) => [m.host, m.port, m.uris, m.app, m.private_instance_index])).toEqual([
      ['127.9.0.2', 8080, ['hello.example.com'], lrp.appGuid, '1'],
      ['127.9.0.2', 9090, ['admin.example.com'], lrp.appGuid, '1'],
    ]);
    // Sent while the pod was still there, not draining.
    expect(sent.every((s) => s.podsThen.includes('web-1'))).toBe(true);
    expect(names(e, 'pods')).toEqual([]);

    // Again while it terminates: the emitter already unregistered it when it saw the deletionTimestamp.
    sent.length = 0;
    await stopInstance(deps, lrp.processGuid, 'web-1', 1);
    expect(sent).toEqual([]);
  });
});
