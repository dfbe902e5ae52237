/**
 * CC's side of a seeded run: its model of apps and tasks, the changes its users make, and its convergence
 * loop against the API.
 */
import { taskBody, uuid } from '@opi/contract/testing';
import type { FakeCc } from '../support/fake-cc.js';
import { type AppModel, type TaskModel, appDesireBody, taskEnv } from './cc-model.js';
import { APPS, TASKS } from './config.js';
import { deliveries } from './counting.js';
import { pool, request } from './http.js';

export interface CcLoop {
  readonly model: AppModel[];
  readonly tasks: TaskModel[];
  /**
   * Tasks CC had handed over (202) that GET /tasks later no longer listed, unreported: CC re-submitted
   * them.
   */
  readonly vanished: Set<string>;
  mutate: () => void;
  pass: () => Promise<void>;
}

/** CC's model for `seed` (drawn from `ccRand`), converging through the API at `base`; counts its passes. */
export function ccLoop(
  seed: number,
  ccRand: () => number,
  base: string,
  cc: FakeCc,
  stats: { passes: number },
): CcLoop {
  const vanished = new Set<string>();
  const model: AppModel[] = Array.from({ length: APPS }, (_, i) => {
    const guid = uuid(i, `a${seed}`);
    const version = uuid(i, `b${seed}`);
    return {
      guid,
      version,
      pg: `${guid}-${version}`,
      wanted: 'running',
      instances: 1 + Math.floor(ccRand() * 2),
      annotation: '1000.000001',
      image: 'registry.example/app:1',
    };
  });
  const tasks: TaskModel[] = Array.from({ length: TASKS }, (_, i) => ({
    guid: uuid(i, `c${seed}`),
    created: false,
    accepted: false,
    fails: ccRand() < 0.1,
    runMs: 200 + Math.floor(ccRand() * 4000),
    posts: 0,
  }));
  let updates = 0;

  /** A change CC's users make: scale, new annotation, sometimes a new image; or stop the app. */
  const mutate = () => {
    for (let k = 0; k < 6; k++) {
      const a = model[Math.floor(ccRand() * model.length)];
      if (!a || a.wanted === 'stopped') continue;
      if (ccRand() < 0.25) {
        a.wanted = 'stopped';
      } else {
        a.instances = 1 + Math.floor(ccRand() * 3);
        a.annotation = `${2000 + ++updates}.000001`;
        if (ccRand() < 0.3) a.image = `registry.example/app:${2 + Math.floor(ccRand() * 3)}`;
      }
    }
    for (let k = 0; k < Math.ceil(TASKS / 20); k++) {
      const t = tasks.find((x) => !x.created);
      if (t) t.created = true;
    }
  };

  /** One pass of CC's convergence loop: make the OPI's view match the model; retry what failed. */
  const pass = async () => {
    stats.passes++;
    const r = await request(base, 'GET', '/apps');
    if (r.status === 200) {
      const infos = new Map(
        (
          JSON.parse(r.text) as {
            desired_lrp_scheduling_infos: {
              desired_lrp_key: { process_guid: string };
              annotation: string;
            }[];
          }
        ).desired_lrp_scheduling_infos.map((s) => [s.desired_lrp_key.process_guid, s.annotation]),
      );
      const known = new Set(model.map((a) => a.pg));
      const work: (() => Promise<unknown>)[] = [];
      for (const a of model) {
        if (a.wanted === 'running') {
          const ann = infos.get(a.pg);
          if (ann === undefined) work.push(() => request(base, 'PUT', `/apps/${a.pg}`, appDesireBody(a)));
          else if (ann !== a.annotation) {
            work.push(() =>
              request(base, 'POST', `/apps/${a.pg}`, {
                guid: a.guid,
                version: a.version,
                update: { instances: a.instances, annotation: a.annotation, image: a.image },
              }),
            );
          }
        } else if (infos.has(a.pg)) {
          work.push(() => request(base, 'PUT', `/apps/${a.guid}/${a.version}/stop`));
        }
      }
      for (const pg of infos.keys()) {
        if (!known.has(pg))
          work.push(() => request(base, 'PUT', `/apps/${pg.slice(0, 36)}/${pg.slice(37)}/stop`));
      }
      await pool(work, 16, async (w) => {
        await w();
      });
    }
    // Tasks: (re-)submit what CC created and the OPI neither lists nor has reported. Listing first, then
    // reading the callbacks, so a task reported in between is seen as reported.
    const t = await request(base, 'GET', '/tasks');
    if (t.status !== 200) return;
    const listed = new Set((JSON.parse(t.text) as { guid: string }[]).map((x) => x.guid));
    const got = deliveries(cc);
    const todo = tasks.filter((x) => x.created && !listed.has(x.guid) && !got.has(x.guid));
    await pool(todo, 8, async (x) => {
      if (x.accepted) vanished.add(x.guid);
      x.posts++;
      const body = taskBody(cc.url, x.guid, taskEnv(x));
      x.accepted = (await request(base, 'POST', `/tasks/${x.guid}`, body)).status === 202;
    });
  };

  return { model, tasks, vanished, mutate, pass };
}
