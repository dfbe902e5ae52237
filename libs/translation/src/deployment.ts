/** The Deployment (apps/v1) that runs a desired LRP. */
import type { DesiredLrp } from '@opi/domain';
import { containerResources, containerSecurityContext } from './container.js';
import { containerEnv } from './env.js';
import type { Container, Deployment, DeploymentSpec, PodSpec, Volume, VolumeMount } from './k8s-objects.js';
import {
  LABEL_GUID,
  LABEL_VERSION,
  annotationsFor,
  labelsFor,
  podAnnotationsFor,
  selectorFor,
} from './labels.js';
import { registrySecretName, workloadName } from './names.js';
import { probesFor } from './probes.js';

export interface DeploymentSettings {
  /** Refuse images that run as root (the kubelet then fails their start with CreateContainerConfigError). */
  runAsNonRoot: boolean;
}

/** The app's container name, the same in every LRP's pods. */
export const APP_CONTAINER = 'opi';

/** One PVC volume per mount, named by position so the names stay valid whatever the claim is called. */
function volumes(lrp: DesiredLrp): { volumes: Volume[]; mounts: VolumeMount[] } {
  const named = lrp.volumeMounts.map((m, i) => ({ ...m, name: `volume-${i}` }));
  return {
    volumes: named.map((m) => ({ name: m.name, persistentVolumeClaim: { claimName: m.claimName } })),
    mounts: named.map((m) => ({ name: m.name, mountPath: m.mountPath })),
  };
}

function container(lrp: DesiredLrp, settings: DeploymentSettings, mounts: VolumeMount[]): Container {
  return {
    name: APP_CONTAINER,
    image: lrp.image,
    // CC sends `["/bin/sh","-c","<cmd>"]`, or `[]` for the image's own entrypoint and command.
    ...(lrp.command.length > 0 ? { command: [...lrp.command] } : {}),
    env: containerEnv(lrp),
    ...(lrp.ports.length > 0
      ? { ports: lrp.ports.map((p) => ({ containerPort: p, protocol: 'TCP' as const })) }
      : {}),
    resources: containerResources(lrp),
    ...probesFor(lrp),
    securityContext: containerSecurityContext(settings.runAsNonRoot),
    ...(mounts.length > 0 ? { volumeMounts: mounts } : {}),
  };
}

function podSpec(lrp: DesiredLrp, settings: DeploymentSettings): PodSpec {
  const { volumes: vols, mounts } = volumes(lrp);
  return {
    containers: [container(lrp, settings, mounts)],
    // Apps get no API credentials and no service env vars (hundreds of them in a busy namespace).
    automountServiceAccountToken: false,
    enableServiceLinks: false,
    ...(lrp.registry ? { imagePullSecrets: [{ name: registrySecretName(lrp) }] } : {}),
    ...(vols.length > 0 ? { volumes: vols } : {}),
    // Spread instances over nodes so one node failure does not take every instance down.
    affinity: {
      podAntiAffinity: {
        preferredDuringSchedulingIgnoredDuringExecution: [
          {
            weight: 100,
            podAffinityTerm: {
              labelSelector: { matchLabels: { [LABEL_GUID]: lrp.guid, [LABEL_VERSION]: lrp.version } },
              topologyKey: 'kubernetes.io/hostname',
            },
          },
        ],
      },
    },
  };
}

/**
 * The Deployment for an LRP. Scaling and CC's `last_updated` touch only `spec.replicas` and the
 * Deployment's own annotations; everything in the pod template depends on fields that only a new desire
 * changes, so an update never rolls pods by accident.
 */
export function lrpToDeployment(
  lrp: DesiredLrp,
  settings: DeploymentSettings,
): Deployment & { spec: DeploymentSpec } {
  const labels = labelsFor(lrp);
  return {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: {
      name: workloadName(lrp),
      namespace: lrp.namespace,
      labels,
      annotations: annotationsFor(lrp),
    },
    spec: {
      replicas: lrp.instances,
      selector: selectorFor(lrp),
      strategy: { type: 'RollingUpdate', rollingUpdate: { maxSurge: '25%', maxUnavailable: '25%' } },
      revisionHistoryLimit: 2,
      template: {
        metadata: { labels: { ...labels }, annotations: podAnnotationsFor(lrp) },
        spec: podSpec(lrp, settings),
      },
    },
  };
}
