/**
 * A StatefulSet rollout held up by crash-looping old pods (Kubernetes 1.35's MaxUnavailableStatefulSet
 * gate, kubernetes#137409) after the converge's own rollout checks are gone, as when they ran out: the
 * watch sees the old-revision pods not ready and asks for a check itself, and the fix rolls out.
 */
import { type Job, Queue } from 'bullmq';
import { CRASH_IMAGE_PREFIX } from '@opi/kube-sim';
import { JOBS, QUEUE_NAMES } from '@opi/queue';
import { HOUR_MS } from './cluster-cache/queues.js';
import { type Service, call, desireBody, eventually, startService, uuid } from './harness.js';

interface Instances {
  instances: { index: number; state: string }[];
}

interface RolloutData {
  processGuid: string;
  check: number;
  once?: boolean;
}

describe('a StatefulSet rollout held up past its checks', () => {
  let s: Service;
  let lrpQueue: Queue;
  beforeAll(async () => {
    s = await startService({
      env: { OPI_WORKLOAD_KIND: 'statefulset', OPI_RESYNC_INTERVAL_MS: HOUR_MS },
      simBehaviour: { maxUnavailableStatefulSet: true },
    });
    lrpQueue = new Queue(QUEUE_NAMES.lrp, { connection: s.redis, prefix: s.settings.queuePrefix });
  });
  afterAll(async () => {
    await lrpQueue.close();
    await s.close();
  });

  it('is picked up again from the watch', async () => {
    const guid = uuid(1, 'held');
    const version = uuid(2, 'v1');
    const pg = `${guid}-${version}`;
    const body = desireBody(guid, version, {
      instances: 3,
      lifecycle: { docker_lifecycle: { image: `registry.example/${CRASH_IMAGE_PREFIX}:1`, command: [] } },
    });
    expect((await call(s.base, 'PUT', `/apps/${pg}`, body)).status).toBe(202);
    const instances = async (): Promise<Instances['instances']> => {
      const r = await call(s.base, 'GET', `/apps/${guid}/${version}/instances`);
      return r.status === 200 ? (JSON.parse(r.text) as Instances).instances : [];
    };
    const images = async (): Promise<string[]> => {
      const pods = await s.core.listNamespacedPod({ namespace: 'cf-workloads' });
      return pods.items
        .filter(
          (p) => p.metadata?.labels?.['cloudfoundry.org/app_guid'] === guid && !p.metadata.deletionTimestamp,
        )
        .map((p) => p.spec?.containers[0]?.image ?? '')
        .sort();
    };
    await eventually(async () => {
      const list = await instances();
      return list.length === 3 && list.every((i) => i.state !== 'RUNNING') && (await images()).length === 3;
    }, 'three crash-looping instances');

    // The converge's checks are taken away as they are scheduled, as if they had all run out.
    const rolloutJobs = async (...states: ('delayed' | 'waiting' | 'completed')[]): Promise<Job[]> =>
      (await lrpQueue.getJobs(states, 0, -1)).filter(
        (j) => j.name === JOBS.settleRollout.name && (j.data as RolloutData).processGuid === pg,
      );
    let removing = true;
    const remover = (async () => {
      while (removing) {
        for (const j of await rolloutJobs('delayed', 'waiting')) {
          if (!(j.data as RolloutData).once) await j.remove().catch(() => undefined);
        }
        await new Promise((r) => setTimeout(r, 20));
      }
    })();
    try {
      const update = {
        guid,
        version,
        update: { instances: 3, annotation: 'fixed', image: 'registry.example/app:2' },
      };
      expect((await call(s.base, 'POST', `/apps/${pg}`, update)).status).toBe(200);
      await eventually(
        async () => {
          const list = await instances();
          const pods = await images();
          return (
            list.map((i) => `${i.index}:${i.state}`).join() === '0:RUNNING,1:RUNNING,2:RUNNING' &&
            pods.join() === Array(3).fill('registry.example/app:2').join()
          );
        },
        'three running instances of the new image',
        30_000,
      );
    } finally {
      removing = false;
      await remover;
    }
    // None of the converge's checks ran: the old pods, which the controller would never replace, were
    // deleted by the checks the watch asked for (each run once, scheduling no next one).
    const done = await rolloutJobs('completed');
    expect(done.filter((j) => (j.data as RolloutData).once !== true)).toEqual([]);
    expect(done.filter((j) => (j.data as RolloutData).once === true).length).toBeGreaterThanOrEqual(1);
  });
});
