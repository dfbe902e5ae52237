/**
 * The service as separate processes for the chaos suite: one API and a set of workers (the built
 * `apps/*\/dist/main.js`), each logging to its own file, that can be SIGKILLed and replaced.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { openSync, closeSync, readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const repo = resolve(dirname(fileURLToPath(import.meta.url)), '../..');

export interface ServiceProcess {
  readonly name: string;
  readonly proc: ChildProcess;
  readonly logFile: string;
  /** Set when the process ended without this suite killing it. */
  unexpectedExit?: string;
  killedByUs: boolean;
}

export function spawnService(
  kind: 'api' | 'worker',
  name: string,
  env: Record<string, string>,
  logDir: string,
): ServiceProcess {
  const logFile = join(logDir, `${name}.log`);
  const fd = openSync(logFile, 'a');
  const proc = spawn(process.execPath, [join(repo, `apps/${kind}/dist/main.js`)], {
    env: { PATH: process.env['PATH'] ?? '', ...env },
    stdio: ['ignore', fd, fd],
  });
  closeSync(fd);
  const sp: ServiceProcess = { name, proc, logFile, killedByUs: false };
  proc.once('exit', (code, signal) => {
    if (!sp.killedByUs) sp.unexpectedExit = `code ${String(code)}, signal ${String(signal)}`;
  });
  return sp;
}

export function alive(sp: ServiceProcess): boolean {
  return sp.proc.exitCode === null && sp.proc.signalCode === null;
}

export async function kill(sp: ServiceProcess, signal: NodeJS.Signals = 'SIGKILL'): Promise<void> {
  if (!alive(sp)) return;
  sp.killedByUs = true;
  const done = new Promise<void>((r) =>
    sp.proc.once('exit', () => {
      r();
    }),
  );
  sp.proc.kill(signal);
  await done;
}

/** The last lines of a process's log, for a failure message. */
export function logTail(sp: ServiceProcess, lines = 20): string {
  try {
    return readFileSync(sp.logFile, 'utf8').trimEnd().split('\n').slice(-lines).join('\n');
  } catch {
    return '';
  }
}

/** Freezes (SIGSTOP) or thaws (SIGCONT) a live process, as a long GC pause or a stalled VM would. */
export function freeze(sp: ServiceProcess, frozen: boolean): void {
  if (alive(sp)) sp.proc.kill(frozen ? 'SIGSTOP' : 'SIGCONT');
}
