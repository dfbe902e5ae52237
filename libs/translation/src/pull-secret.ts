/** The image pull Secret of an LRP whose image is in a private registry. */
import type { DesiredLrp, RegistryCredentials } from '@opi/domain';
import type { Secret } from '@opi/kube-objects';
import { labelsFor } from './labels.js';
import { registrySecretName } from './names.js';
import { dockerConfigJson } from './docker-config.js';

export const DOCKER_CONFIG_JSON_TYPE = 'kubernetes.io/dockerconfigjson';
export const DOCKER_CONFIG_JSON_KEY = '.dockerconfigjson';

/**
 * A `kubernetes.io/dockerconfigjson` Secret for `lrp.registry`, or undefined without credentials. It
 * carries the LRP's labels so it is found and cleaned up with the workload (see ownedBy).
 */
export function registrySecret(lrp: DesiredLrp): Secret | undefined {
  if (!lrp.registry) return undefined;
  return dockerConfigSecret(
    { name: registrySecretName(lrp), namespace: lrp.namespace, labels: labelsFor(lrp) },
    lrp.registry,
  );
}

/** A `kubernetes.io/dockerconfigjson` Secret holding `credentials`, for any workload's image pull. */
export function dockerConfigSecret(
  metadata: { name: string; namespace: string; labels: Record<string, string> },
  credentials: RegistryCredentials,
): Secret {
  return {
    apiVersion: 'v1',
    kind: 'Secret',
    metadata,
    type: DOCKER_CONFIG_JSON_TYPE,
    data: {
      [DOCKER_CONFIG_JSON_KEY]: Buffer.from(dockerConfigJson(credentials), 'utf8').toString('base64'),
    },
  };
}
