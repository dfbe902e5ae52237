/** CC's model of apps and tasks in the chaos suite, and the bodies it sends for them. */
import { desireBody } from '@opi/contract/testing';

export interface AppModel {
  guid: string;
  version: string;
  pg: string;
  wanted: 'running' | 'stopped';
  instances: number;
  annotation: string;
  image: string;
}

export interface TaskModel {
  guid: string;
  /** Whether CC "created" it yet (tasks are created over the chaos phase). */
  created: boolean;
  /** The last POST was answered 202. */
  accepted: boolean;
  fails: boolean;
  runMs: number;
  posts: number;
}

/** CC's desire of a modelled app: its instances, annotation (as last_updated) and image. */
export function appDesireBody(
  a: Pick<AppModel, 'guid' | 'version' | 'instances' | 'annotation' | 'image'>,
  overrides: Record<string, unknown> = {},
): Record<string, unknown> {
  return desireBody(a.guid, a.version, {
    app_name: `app-${a.guid.slice(-6)}`,
    instances: a.instances,
    last_updated: a.annotation,
    lifecycle: { docker_lifecycle: { image: a.image, command: [] } },
    ...overrides,
  });
}

/** A task's run time and, for one that fails, exit code, in the simulated cluster. */
export function taskEnv(t: TaskModel): Record<string, string> {
  const env: Record<string, string> = { KUBESIM_RUN_MS: String(t.runMs) };
  if (t.fails) Object.assign(env, { KUBESIM_BEHAVIOUR: 'fail', KUBESIM_EXIT_CODE: '3' });
  return env;
}
