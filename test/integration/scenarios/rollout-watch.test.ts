/**
 * A StatefulSet rollout held up by crash-looping old pods (Kubernetes 1.35's MaxUnavailableStatefulSet
 * gate, kubernetes#137409) after the converge's own rollout checks are gone, as when they ran out: the
 * watch sees the old-revision pods not ready and asks for a check itself, and the fix rolls out.
 */
import { type Job, Queue } from 'bullmq';
import { JOBS, QUEUE_NAMES } from '@opi/queue';
import { HOUR_MS } from '../cluster-cache/queues.js';
import { desireCrashLoopingApp } from './crash-looping-app.js';
import { type Service, eventually, startService } from '../../support/service.js';

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
    const app = await desireCrashLoopingApp(s, 'held');
    const pg = app.pg;
    await app.broken();

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
      await app.fix(30_000);
    } finally {
      removing = false;
      await remover;
    }
    // None of the converge's checks ran: the old pods, which the controller would never replace, were
    // deleted by the checks the watch asked for (each run once, scheduling no next one). The check that
    // deleted the last old pod may still be finishing when the rollout is seen done: waited for.
    const done = await eventually(
      async () => {
        const jobs = await rolloutJobs('completed');
        return jobs.some((j) => (j.data as RolloutData).once === true) ? jobs : undefined;
      },
      'a completed check the watch asked for',
      10_000,
    );
    expect(done.filter((j) => (j.data as RolloutData).once !== true)).toEqual([]);
  });
});
