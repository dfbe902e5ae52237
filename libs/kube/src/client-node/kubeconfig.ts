/**
 * Loading the connection settings. Apps get an opaque `KubeConnection` to hand to `ClientNodeKubernetes`,
 * so that nothing outside this package depends on client-node's KubeConfig API.
 */
import { existsSync } from 'node:fs';
import { KubeConfig } from '@kubernetes/client-node';

declare const opaque: unique symbol;

/** A loaded kubeconfig; only this package looks inside. */
export interface KubeConnection {
  readonly [opaque]: 'KubeConnection';
}

export interface KubeConfigSource {
  /** A kubeconfig file (relative certificate paths resolve against its directory). */
  kubeconfigFile?: string;
  /** A kubeconfig document as YAML (or JSON). */
  kubeconfigYaml?: string;
  /** The pod's service account: KUBERNETES_SERVICE_HOST/PORT and the mounted token and CA. */
  inCluster?: boolean;
}

const SERVICE_ACCOUNT_TOKEN = '/var/run/secrets/kubernetes.io/serviceaccount/token';

/**
 * Loads exactly one source. Unlike client-node's loadFromDefault there is no silent fallback to
 * http://localhost:8080: a service pointed at nothing should fail at start, not on its first job.
 */
export function loadKubeConfig(source: KubeConfigSource): KubeConnection {
  const given = [source.kubeconfigFile, source.kubeconfigYaml, source.inCluster || undefined].filter(
    (s) => s !== undefined && s !== '',
  );
  if (given.length !== 1) {
    throw new Error('give exactly one of kubeconfigFile, kubeconfigYaml or inCluster');
  }
  const kc = new KubeConfig();
  if (source.inCluster) {
    // loadFromCluster does not check its inputs; without them it builds https://undefined:undefined.
    if (!process.env['KUBERNETES_SERVICE_HOST'] || !process.env['KUBERNETES_SERVICE_PORT']) {
      throw new Error('in-cluster config needs KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT');
    }
    if (!existsSync(SERVICE_ACCOUNT_TOKEN)) {
      throw new Error(`in-cluster config needs the service account token at ${SERVICE_ACCOUNT_TOKEN}`);
    }
    kc.loadFromCluster();
  } else if (source.kubeconfigFile) {
    kc.loadFromFile(source.kubeconfigFile);
  } else {
    kc.loadFromString(source.kubeconfigYaml ?? '');
  }
  const cluster = kc.getCurrentCluster();
  if (!cluster) {
    throw new Error(`the kubeconfig's current context "${kc.getCurrentContext()}" names no cluster`);
  }
  return kc as unknown as KubeConnection;
}

/** For the adapter: the client-node object behind a connection (or a KubeConfig passed as is). */
export function clientNodeConfig(connection: KubeConnection | KubeConfig): KubeConfig {
  if (connection instanceof KubeConfig) return connection;
  throw new TypeError('not a connection from loadKubeConfig');
}

/**
 * The cluster a process is configured for: the KUBECONFIG file, else the pod's service account when it
 * runs in one; undefined when neither (a process that needs a cluster then refuses to start).
 */
export function configuredCluster(settings: {
  kubeconfig: string | undefined;
  inCluster: boolean;
}): KubeConnection | undefined {
  if (settings.kubeconfig) return loadKubeConfig({ kubeconfigFile: settings.kubeconfig });
  return settings.inCluster ? loadKubeConfig({ inCluster: true }) : undefined;
}
