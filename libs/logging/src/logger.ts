/**
 * The service's pino logger: JSON lines in production, pretty in a terminal, and secrets redacted at the
 * source (registry passwords, tokens, authorization headers) whatever object carries them.
 */
import { pino, type Logger, type LoggerOptions } from 'pino';

export type { Logger } from 'pino';

/** Paths censored wherever they appear in a logged object. */
export const REDACT_PATHS = [
  'password',
  '*.password',
  '*.*.password',
  'registry_password',
  '*.registry_password',
  '*.*.registry_password',
  '*.*.*.registry_password',
  'token',
  '*.token',
  'req.headers.authorization',
  'req.headers.cookie',
  'headers.authorization',
  'registry.password',
  '*.registry.password',
];

/** The keys censored at the top level of a line: what a flat line of our own fields must never carry. */
export const TOP_LEVEL_SECRET_KEYS: readonly string[] = REDACT_PATHS.filter((p) => !p.includes('.'));

export function createLogger(options: { level: string; name?: string; pretty?: boolean }): Logger {
  const opts: LoggerOptions = {
    level: options.level,
    redact: { paths: REDACT_PATHS, censor: '[redacted]' },
    base: { name: options.name ?? 'opi' },
  };
  const pretty = options.pretty ?? process.stdout.isTTY;
  if (pretty) {
    return pino({
      ...opts,
      transport: { target: 'pino-pretty', options: { colorize: true, ignore: 'pid,hostname' } },
    });
  }
  // Lines are buffered and written in batches (from 1 KiB, every 250 ms, and at exit) rather than one write
  // per line: at thousands of requests a second a write per line was a large share of the API's work.
  // A SIGKILL can lose the last quarter second of lines. Batches stay small (maxWrite): sonic-boom
  // measures the byte length of its last, growing chunk on every line, which copies the whole chunk, so
  // its default 16 KiB chunks cost about 8 KiB of copying per line (decision 0002).
  const destination = pino.destination({ dest: 1, sync: false, minLength: 1024, maxWrite: 2048 });
  setInterval(() => {
    destination.flush();
  }, 250).unref();
  return pino(opts, destination);
}
