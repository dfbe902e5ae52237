/** Processes the deployment tests start as an image or compose would, read through their output and command lines. */
import { type ChildProcess, spawn } from 'node:child_process';

/** One free-port finder for every rig: the router rig's. */
export { freePort } from '@opi/router-rig';

export interface Started {
  child: ChildProcess;
  output: () => string;
  exited: Promise<number | null>;
}

export function start(cwd: string, argv: string[], childEnv: Record<string, string>): Started {
  const [cmd = '', ...args] = argv;
  // `node` as the image's PATH finds it: this very Node.
  const child = spawn(cmd === 'node' ? process.execPath : cmd, args, {
    cwd,
    env: childEnv,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout.on('data', (b: Buffer) => (output += b.toString()));
  child.stderr.on('data', (b: Buffer) => (output += b.toString()));
  const exited = new Promise<number | null>((done) => {
    child.once('exit', (code) => {
      done(code);
    });
  });
  return { child, output: () => output, exited };
}

/** The first JSON log line with this message. */
export function logLine(output: string, msg: string): Record<string, unknown> | undefined {
  for (const line of output.split('\n')) {
    if (!line.includes(msg)) continue;
    try {
      const o = JSON.parse(line) as Record<string, unknown>;
      if (o['msg'] === msg) return o;
    } catch {
      // not a log line
    }
  }
  return undefined;
}

/** The value after `name` in a command line. */
export function flag(command: string[] | undefined, name: string): string | undefined {
  const i = (command ?? []).indexOf(name);
  return i >= 0 ? command?.[i + 1] : undefined;
}
