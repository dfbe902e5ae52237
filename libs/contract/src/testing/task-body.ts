/**
 * The body CC sends to `POST /tasks/:guid`, with the completion reported to
 * `<callbackBase>/internal/v4/tasks/<guid>/completed`. In the simulated cluster the task runs for
 * KUBESIM_RUN_MS=200 unless `env` says otherwise: `env` is added to that default and overrides it.
 * A test that needs another field (an invalid callback, another lifecycle) spreads the result and sets it.
 */
export function taskBody(callbackBase: string, guid: string, env: Record<string, string> = {}) {
  return {
    name: `task-${guid.slice(0, 8)}`,
    app_guid: 'app-1',
    app_name: 'app',
    org_guid: 'org-1',
    org_name: 'org',
    space_guid: 'space-1',
    space_name: 'dev',
    completion_callback: `${callbackBase}/internal/v4/tasks/${guid}/completed`,
    environment: Object.entries({ KUBESIM_RUN_MS: '200', ...env }).map(([name, value]) => ({ name, value })),
    lifecycle: {
      docker_lifecycle: { image: 'registry.example/task:1', command: ['/bin/sh', '-c', 'echo hi'] },
    },
    memory_mb: 64,
    disk_mb: 128,
    cpu_weight: 1,
  };
}
