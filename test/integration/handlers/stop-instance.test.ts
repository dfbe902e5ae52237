/** stop-instance, through the client-node adapter against the simulated cluster: one pod of one LRP. */
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

    await expect(stopInstance(e.deps, lrp.processGuid, 'web-1')).resolves.toEqual({
      kind: 'instance-stopped',
      pod: 'web-1',
      result: 'deleted',
    });
    expect(names(e, 'pods')).toEqual(['other-0', 'web-0']);
    // The kubelet removes it once stopped. Again: already gone. Another app's pod: never touched.
    removeTerminatedPods(e);
    await expect(stopInstance(e.deps, lrp.processGuid, 'web-1')).resolves.toEqual({
      kind: 'instance-stopped',
      pod: 'web-1',
      result: 'already gone',
    });
    await expect(stopInstance(e.deps, lrp.processGuid, 'other-0')).resolves.toEqual({
      kind: 'instance-stopped',
      pod: 'other-0',
      result: 'already gone',
    });
    expect(names(e, 'pods')).toEqual(['other-0', 'web-0']);

    await e.store.stop(lrp.processGuid, lrp.guid, lrp.version);
    await expect(stopInstance(e.deps, lrp.processGuid, 'web-0')).resolves.toEqual({
      kind: 'skipped',
      why: 'lrp no longer desired',
    });
    expect(names(e, 'pods')).toEqual(['other-0', 'web-0']);
  });
});
