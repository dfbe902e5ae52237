/** `npm run start:worker`: workers alone, as many processes as the load needs, against a real cluster. */
import { configuredCluster } from '@opi/kube';
import { createLogger } from '@opi/logging';
import { onShutdown, settingsOrExit } from '@opi/runtime';
import { startWorker } from './start.js';
import { StartRefusedError } from './workload-mode.js';

const settings = settingsOrExit();
const logger = createLogger({ level: settings.logLevel, name: 'opi-worker' });
const cluster = configuredCluster(settings);
if (!cluster) {
  logger.fatal('no cluster: set KUBECONFIG, or run the worker in a pod (in-cluster configuration)');
  process.exit(2);
}
const worker = await startWorker(settings, logger, cluster).catch((e: unknown) => {
  if (!(e instanceof StartRefusedError)) throw e;
  logger.fatal(e.message);
  process.exit(2);
});
onShutdown(logger, settings.shutdownTimeoutMs, [() => worker.close()]);
