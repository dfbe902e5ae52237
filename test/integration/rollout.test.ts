/**
 * A new image pushed over a crash-looping app rolls out, in both workload modes, on a cluster whose
 * StatefulSet controller never replaces crash-looping old pods by itself (Kubernetes 1.35's
 * MaxUnavailableStatefulSet gate, kubernetes#137409): the converge's rollout checks delete them.
 */
import { CRASH_IMAGE_PREFIX } from '@opi/kube-sim';
import { type Service, call, desireBody, eventually, startService, uuid } from './harness.js';

interface Instances {
  instances: { index: number; state: string }[];
}

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
      const guid = uuid(1, kind === 'deployment' ? 'dep' : 'sts');
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
            (p) =>
              p.metadata?.labels?.['cloudfoundry.org/app_guid'] === guid && !p.metadata.deletionTimestamp,
          )
          .map((p) => p.spec?.containers[0]?.image ?? '')
          .sort();
      };
      // Three instances that never become ready: the broken release.
      await eventually(async () => {
        const list = await instances();
        const pods = await images();
        return list.length === 3 && list.every((i) => i.state !== 'RUNNING') && pods.length === 3;
      }, 'three crash-looping instances');

      // CC pushes the fix as an update of the image.
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
        20_000,
      );
    });
  },
);
