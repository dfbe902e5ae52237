/**
 * The log buffers of the kubelet's containers: the lines a run writes (its start, SIM_ENV's printed
 * environment and log lines, SIGTERM, its exit), the run before it kept for `previous`, the termination
 * message taken from the log tail, and the pods/log subresource that reads them, with the apiserver's and
 * kubelet's error wording.
 */
import type { LogRequest } from '../api-server.js';
import { errors } from '../errors.js';
import type { KubeObject } from '../types.js';
import type { Context } from './context.js';
import { podSpec, resolvedEnv } from './pods.js';
import type { ContainerRun, PodRun } from './runtime.js';

/** terminationMessagePolicy FallbackToLogsOnError: the log tail, at most 80 lines / 2048 bytes. */
const FALLBACK_LOG_LINES = 80;
const FALLBACK_LOG_BYTES = 2048;

/** A new run of the container starts a new log; the last run's becomes the previous one. */
export function startLog(c: ContainerRun, pod: KubeObject | undefined): void {
  if (c.logs !== undefined) c.previousLogs = c.logs;
  c.logs = [
    `kubesim: starting container ${c.name} (image ${c.spec.image}, attempt ${c.restartCount + 1})`,
    ...(pod ? resolvedEnv(pod, c.spec) : []),
    ...c.sim.log,
  ];
}

export function logSigterm(c: ContainerRun): void {
  c.logs?.push(`kubesim: received SIGTERM, stopping container ${c.name}`);
}

/** The run's log with its exit line (a container that never started gets a log of that line alone). */
export function logExit(c: ContainerRun, exitCode: number, oom: boolean): string[] {
  const logs = c.logs ?? [];
  logs.push(`kubesim: container ${c.name} exited with code ${exitCode}${oom ? ' (OOMKilled)' : ''}`);
  return logs;
}

/** SIM_ENV's message, else (FallbackToLogsOnError, a failed run) the log tail. */
export function terminationMessage(c: ContainerRun, exitCode: number, logs: string[]): string | undefined {
  if (c.sim.terminationMessage !== undefined && c.sim.terminationMessage !== '')
    return c.sim.terminationMessage;
  if (c.spec.terminationMessagePolicy !== 'FallbackToLogsOnError' || exitCode === 0) return undefined;
  let tail = logs.slice(-FALLBACK_LOG_LINES).join('\n');
  if (tail.length > FALLBACK_LOG_BYTES) tail = tail.slice(-FALLBACK_LOG_BYTES);
  return tail || undefined;
}

/** The pods/log subresource, with the apiserver's and kubelet's error wording. */
export function podLogs(ctx: Context, req: LogRequest, runOf: (uid: string) => PodRun | undefined): string {
  const { store, types } = ctx;
  const pod = store.get(types.pods, req.namespace, req.name);
  if (!pod) throw errors.notFound('pods', '', req.name);
  const spec = podSpec(pod);
  const names = (spec.containers ?? []).map((c) => c.name);
  const initNames = (spec.initContainers ?? []).map((c) => c.name);
  let name = req.container;
  if (!name) {
    if (names.length === 1) name = names[0];
    else {
      const init = initNames.length ? ` or one of the init containers: [${initNames.join(' ')}]` : '';
      throw errors.badRequest(
        `a container name must be specified for pod ${req.name}, choose one of: [${names.join(' ')}]${init}`,
      );
    }
  }
  if (!name || (!names.includes(name) && !initNames.includes(name))) {
    throw errors.badRequest(`container ${name ?? ''} is not valid for pod ${req.name}`);
  }
  // The apiserver has no kubelet to ask for a pod not yet on a node: an empty log, not an error.
  if (!spec.nodeName) return '';
  const run = runOf(pod.metadata.uid);
  const c = run ? [...run.init, ...run.containers].find((x) => x.name === name) : undefined;
  let lines: string[];
  if (req.previous) {
    if (!c?.previousLogs) {
      throw errors.badRequest(`previous terminated container "${name}" in pod "${req.name}" not found`);
    }
    lines = c.previousLogs;
  } else {
    if (!c?.logs) {
      const reason = c?.state.waiting?.reason ?? 'ContainerCreating';
      throw errors.badRequest(`container "${name}" in pod "${req.name}" is waiting to start: ${reason}`);
    }
    lines = c.logs;
  }
  if (req.tailLines !== undefined && req.tailLines >= 0)
    lines = req.tailLines === 0 ? [] : lines.slice(-req.tailLines);
  return lines.map((l) => `${l}\n`).join('');
}
