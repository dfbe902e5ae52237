/**
 * Which cluster `npm start` drives: KUBECONFIG when set, the pod's own cluster inside Kubernetes, and
 * otherwise the built-in simulated cluster, so a newcomer sees the whole flow with nothing installed.
 */
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Settings } from '@opi/config';
import { type KubeConnection, configuredCluster, loadKubeConfig } from '@opi/kube';
import { podServingHint, startSimulator } from '@opi/kube-sim';
import type { Logger } from '@opi/logging';

export interface ChosenCluster {
  connection: KubeConnection;
  close(): Promise<void>;
}

export async function chooseCluster(settings: Settings, logger: Logger): Promise<ChosenCluster> {
  const configured = configuredCluster(settings);
  if (configured) {
    logger.info(
      settings.kubeconfig ? { kubeconfig: settings.kubeconfig } : {},
      settings.kubeconfig ? 'using the cluster of KUBECONFIG' : 'using the in-cluster configuration',
    );
    return { connection: configured, close: () => Promise.resolve() };
  }
  const sim = await startSimulator({ namespaces: [settings.namespace] });
  const file = join(tmpdir(), `opi-kubesim-${sim.port}.kubeconfig`);
  await sim.writeKubeconfig(file, settings.namespace);
  logger.warn(
    { url: sim.url, kubeconfig: file },
    `no KUBECONFIG set: using the built-in simulated cluster (kubectl --kubeconfig ${file} get pods)`,
  );
  const hint = podServingHint(sim);
  if (hint) logger.info({ podRange: sim.podRange }, hint);
  if (settings.routing.mode === 'nats') {
    logger.info(
      'OPI_ROUTING=nats: Ready instances of apps with routes are registered with gorouter (curl -H "Host: <route>" <gorouter>/)',
    );
  }
  return {
    connection: loadKubeConfig({ kubeconfigYaml: sim.kubeconfig(settings.namespace) }),
    close: () => sim.close(),
  };
}
