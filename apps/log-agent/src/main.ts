/**
 * `node apps/log-agent/dist/main.js`: the log agent, one per node (the worker image as a DaemonSet with
 * the node's /var/log/pods mounted read-only; k8s/log-agent.yaml).
 */
import { configuredCluster } from '@opi/kube';
import { createLogger } from '@opi/logging';
import { onShutdown, settingsOrExit } from '@opi/runtime';
import { LogAgentSettingsError, startLogAgent } from './start.js';

const settings = settingsOrExit();
const logger = createLogger({ level: settings.logLevel, name: 'opi-log-agent' });
const cluster = configuredCluster(settings);
if (!cluster) {
  logger.fatal('no cluster: set KUBECONFIG, or run the agent in a pod (in-cluster configuration)');
  process.exit(2);
}
const agent = await startLogAgent(settings, logger, cluster).catch((e: unknown) => {
  if (!(e instanceof LogAgentSettingsError)) throw e;
  logger.fatal(e.message);
  process.exit(2);
});
onShutdown(logger, settings.shutdownTimeoutMs, [() => agent.close()]);
