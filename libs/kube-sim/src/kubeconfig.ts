/** A kubeconfig for the simulator that client-node's loadFromFile/loadFromString and kubectl accept. */
import yaml from 'js-yaml';

export function kubeconfigYaml(server: string, token: string, namespace = 'default'): string {
  return yaml.dump({
    apiVersion: 'v1',
    kind: 'Config',
    clusters: [
      {
        name: 'kubesim',
        // client-node ≥ 1.1 refuses plain http unless TLS verification is explicitly skipped.
        cluster: { server, 'insecure-skip-tls-verify': true },
      },
    ],
    users: [{ name: 'kubesim', user: { token } }],
    contexts: [{ name: 'kubesim', context: { cluster: 'kubesim', user: 'kubesim', namespace } }],
    'current-context': 'kubesim',
    preferences: {},
  });
}
