/**
 * The logs of the kubelet's containers: the lines a run writes (its start, SIM_ENV's printed environment
 * and log lines, lines a test asks for, SIGTERM, its exit), the run before it kept for `previous`, the
 * termination message taken from the log tail, and the pods/log subresource that reads them, with the
 * apiserver's and kubelet's error wording. Each run is a ContainerLog (container-log.ts).
 */
import { join } from 'node:path';
import type { LogRequest } from '../api-server.js';
import { errors } from '../errors.js';
import type { KubeObject } from '../types.js';
import { ContainerLog, type LogLine, type LogStreamName, podLogDir } from './container-log.js';
import type { Context } from './context.js';
import { podSpec, resolvedEnv } from './pods.js';
import type { ContainerRun, PodRun } from './runtime.js';

/** What pods/log answers from: the lines, and the live log when the run is still going (follow). */
export interface PodLogRead {
  lines: readonly LogLine[];
  live?: ContainerLog;
}

/** terminationMessagePolicy FallbackToLogsOnError: the log tail, at most 80 lines / 2048 bytes. */
const FALLBACK_LOG_LINES = 80;
const FALLBACK_LOG_BYTES = 2048;

/** A read's lines as plain text, one per line (what pods/log answers without parameters). */
export function logText(read: PodLogRead): string {
  return read.lines.map((l) => `${l.text}\n`).join('');
}

/**
 * A new run of the container starts a new log (a CRI file `<restartCount>.log` when the simulator keeps
 * them); the last run's becomes the previous one.
 */
export function startLog(ctx: Context, run: PodRun, c: ContainerRun, pod: KubeObject | undefined): void {
  if (c.logs !== undefined) {
    c.logs.end();
    c.previousLogs = c.logs;
  }
  const files = ctx.behaviour.podLogFiles;
  const cri = files
    ? {
        settings: files,
        path: join(podLogDir(files.dir, run.namespace, run.name, run.uid), c.name, `${c.restartCount}.log`),
      }
    : undefined;
  const log = new ContainerLog(() => ctx.now(), cri);
  c.logs = log;
  log.write(
    'stdout',
    `kubesim: starting container ${c.name} (image ${c.spec.image}, attempt ${c.restartCount + 1})`,
  );
  for (const line of pod ? resolvedEnv(pod, c.spec) : []) log.write('stdout', line);
  for (const line of c.sim.log) log.write('stdout', line);
  for (const line of c.sim.logErr) log.write('stderr', line);
}

export function logSigterm(c: ContainerRun): void {
  c.logs?.write('stdout', `kubesim: received SIGTERM, stopping container ${c.name}`);
}

/**
 * Ends the run's log with its exit line (a container that never started gets a log of that line alone)
 * and returns its text.
 */
export function logExit(ctx: Context, c: ContainerRun, exitCode: number, oom: boolean): string[] {
  const log = c.logs ?? new ContainerLog(() => ctx.now());
  c.logs = log;
  log.write(
    'stdout',
    `kubesim: container ${c.name} exited with code ${exitCode}${oom ? ' (OOMKilled)' : ''}`,
  );
  log.end();
  return log.lines.map((l) => l.text);
}

/** Lines a test asks a running container to write (`POST /sim/pods/<ns>/<name>/log`). */
export interface LogWrite {
  namespace: string;
  name: string;
  container?: string | undefined;
  lines: { stream: LogStreamName; text: string }[];
  /** Spacing between the lines; 0 writes them all at once. */
  everyMs: number;
}

/** Writes (or schedules) the lines on the container's current run; how many were accepted. */
export function writeLog(ctx: Context, req: LogWrite, runOf: (uid: string) => PodRun | undefined): number {
  const pod = ctx.store.get(ctx.types.pods, req.namespace, req.name);
  if (!pod) throw errors.notFound('pods', '', req.name);
  const run = runOf(pod.metadata.uid);
  const all = run ? [...run.init, ...run.containers] : [];
  const c = req.container ? all.find((x) => x.name === req.container) : run?.containers[0];
  if (!c) throw errors.badRequest(`container ${req.container ?? ''} is not valid for pod ${req.name}`);
  const log = c.logs;
  if (!log || log.ended || !c.state.running) {
    throw errors.badRequest(`container "${c.name}" in pod "${req.name}" is not running`);
  }
  if (req.everyMs <= 0) {
    for (const l of req.lines) log.write(l.stream, l.text);
    return req.lines.length;
  }
  let next = 0;
  const tick = (): void => {
    const l = req.lines[next++];
    if (!l || log.ended) return;
    log.write(l.stream, l.text);
    if (next < req.lines.length) ctx.timers.after(req.everyMs, 'log write', tick);
  };
  tick();
  return req.lines.length;
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
export function podLogs(
  ctx: Context,
  req: LogRequest,
  runOf: (uid: string) => PodRun | undefined,
): PodLogRead {
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
  if (!spec.nodeName) return { lines: [] };
  const run = runOf(pod.metadata.uid);
  const c = run ? [...run.init, ...run.containers].find((x) => x.name === name) : undefined;
  let log: ContainerLog;
  if (req.previous) {
    if (!c?.previousLogs) {
      throw errors.badRequest(`previous terminated container "${name}" in pod "${req.name}" not found`);
    }
    log = c.previousLogs;
  } else {
    if (!c?.logs) {
      const reason = c?.state.waiting?.reason ?? 'ContainerCreating';
      throw errors.badRequest(`container "${name}" in pod "${req.name}" is waiting to start: ${reason}`);
    }
    log = c.logs;
  }
  return log.ended ? { lines: log.lines } : { lines: log.lines, live: log };
}
