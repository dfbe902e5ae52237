/**
 * A new image pushed over a crash-looping app rolls out, in both workload modes, on a cluster whose
 * StatefulSet controller never replaces crash-looping old pods by itself (Kubernetes 1.35's
 * MaxUnavailableStatefulSet gate, kubernetes#137409): the converge's rollout checks delete them.
 */
import { desireCrashLoopingApp } from './crash-looping-app.js';
import { type Service, startService } from '../../support/service.js';

describe.each(['deployment', 'statefulset'] as const)(
  'a crash-looping app fixed by a new image (%s)',
  (kind) => {
    let s: Service;
    beforeAll(async () => {
      s = await startService({
        env: { OPI_WORKLOAD_KIND: kind },
        simBehaviour: { maxUnavailableStatefulSet: true },
      });
    });
    afterAll(async () => {
      await s.close();
    });

    it('runs every instance of the new image', async () => {
      const app = await desireCrashLoopingApp(s, kind === 'deployment' ? 'dep' : 'sts');
      await app.broken();
      await app.fix(20_000);
    });
  },
);
