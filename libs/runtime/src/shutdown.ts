/**
 * Graceful shutdown on SIGTERM/SIGINT: the steps run once, in order (stop accepting, finish or hand back
 * jobs, close connections); a second signal, or the timeout, exits at once.
 */
import type { Logger } from '@opi/logging';

export function onShutdown(logger: Logger, timeoutMs: number, steps: (() => Promise<void>)[]): void {
  let stopping = false;
  const stop = (signal: string): void => {
    if (stopping) {
      logger.warn({ signal }, 'second signal: exiting now');
      process.exit(1);
    }
    stopping = true;
    logger.info({ signal }, 'shutting down');
    const timer = setTimeout(() => {
      logger.error('shutdown timed out');
      process.exit(1);
    }, timeoutMs + 5000);
    timer.unref();
    void (async () => {
      for (const step of steps) {
        try {
          await step();
        } catch (err) {
          logger.error({ err }, 'shutdown step failed');
        }
      }
      logger.info('stopped');
      process.exit(0);
    })();
  };
  process.on('SIGTERM', () => {
    stop('SIGTERM');
  });
  process.on('SIGINT', () => {
    stop('SIGINT');
  });
}
