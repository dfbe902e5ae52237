/** CC's model of apps and tasks in the chaos suite, and the bodies it sends for them. */

/** A guid in UUID form, the `n`th under `salt`. */
export function uuid(n: number, salt: string): string {
  return `${salt.padEnd(8, '0').slice(0, 8)}-0000-4000-8000-${n.toString(16).padStart(12, '0')}`;
}

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

export function desireBody(a: AppModel): Record<string, unknown> {
  return {
    guid: a.guid,
    version: a.version,
    process_guid: a.pg,
    process_type: 'web',
    app_guid: a.guid,
    app_name: `app-${a.guid.slice(-6)}`,
    space_guid: 'space-1',
    space_name: 'dev',
    organization_guid: 'org-1',
    organization_name: 'org',
    ports: [8080],
    environment: { GREETING: 'hello' },
    instances: a.instances,
    last_updated: a.annotation,
    health_check_type: 'port',
    health_check_timeout_ms: 60000,
    memory_mb: 64,
    disk_mb: 256,
    cpu_weight: 1,
    lifecycle: { docker_lifecycle: { image: a.image, command: [] } },
  };
}

/** A task's run time and, for one that fails, exit code, in the simulated cluster. */
export function taskEnv(t: TaskModel): Record<string, string> {
  const env: Record<string, string> = { KUBESIM_RUN_MS: String(t.runMs) };
  if (t.fails) Object.assign(env, { KUBESIM_BEHAVIOUR: 'fail', KUBESIM_EXIT_CODE: '3' });
  return env;
}
