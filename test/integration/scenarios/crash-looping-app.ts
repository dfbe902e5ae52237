/**
 * A 3-instance app whose image crash-loops, and its fix pushed by CC as an update of the image: the
 * rollout cases (rollout.test.ts, rollout-watch.test.ts) share it.
 */
import { CRASH_IMAGE_PREFIX } from '@opi/kube-sim';
import { desireBody, uuid } from '@opi/contract/testing';
import { type Service, call, eventually } from '../../support/service.js';

interface Instances {
  instances: { index: number; state: string }[];
}

export interface CrashLoopingApp {
  pg: string;
  /** Waits for three instances that never become ready: the broken release. */
  broken(): Promise<void>;
  /** CC pushes the fix as an update of the image; waits for three running instances of it. */
  fix(timeoutMs: number): Promise<void>;
}

export async function desireCrashLoopingApp(s: Service, salt: string): Promise<CrashLoopingApp> {
  const guid = uuid(1, salt);
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
  return {
    pg,
    broken: async () => {
      await eventually(async () => {
        const list = await instances();
        return list.length === 3 && list.every((i) => i.state !== 'RUNNING') && (await images()).length === 3;
      }, 'three crash-looping instances');
    },
    fix: async (timeoutMs) => {
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
        timeoutMs,
      );
    },
  };
}
