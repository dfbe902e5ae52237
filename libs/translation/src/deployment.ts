/** The Deployment (apps/v1) that runs a desired LRP. */
import type { DesiredLrp } from '@opi/domain';
import { containerResources, containerSecurityContext } from './container.js';
import { type InstanceEnvOptions, containerEnv } from './env.js';
import type {
  Container,
  Deployment,
  DeploymentSpec,
  ObjectMeta,
  PodSpec,
  PodTemplateSpec,
  Volume,
  VolumeMount,
} from '@opi/kube-objects';
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

/** How the pod template tells the container its instance (see InstanceEnvOptions). */
type TemplateOptions = DeploymentSettings & InstanceEnvOptions;

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

function container(lrp: DesiredLrp, settings: TemplateOptions, mounts: VolumeMount[]): Container {
  return {
    name: APP_CONTAINER,
    image: lrp.image,
    // CC sends `["/bin/sh","-c","<cmd>"]`, or `[]` for the image's own entrypoint and command.
    ...(lrp.command.length > 0 ? { command: [...lrp.command] } : {}),
    env: containerEnv(lrp, settings),
    ...(lrp.ports.length > 0
      ? { ports: lrp.ports.map((p) => ({ containerPort: p, protocol: 'TCP' as const })) }
      : {}),
    resources: containerResources(lrp),
    ...probesFor(lrp),
    securityContext: containerSecurityContext(settings.runAsNonRoot),
    ...(mounts.length > 0 ? { volumeMounts: mounts } : {}),
  };
}

function podSpec(lrp: DesiredLrp, settings: TemplateOptions): PodSpec {
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

/** The workload's own metadata, the same for either kind. */
export function workloadMeta(lrp: DesiredLrp): ObjectMeta & { name: string; labels: Record<string, string> } {
  return {
    name: workloadName(lrp),
    namespace: lrp.namespace,
    labels: labelsFor(lrp),
    annotations: annotationsFor(lrp),
  };
}

/**
 * The pod template of either kind. Everything in it depends on fields that only a new desire changes, so
 * scaling and CC's `last_updated` (the workload's own annotations) never roll pods by accident.
 */
export function podTemplateFor(lrp: DesiredLrp, settings: TemplateOptions): PodTemplateSpec {
  return {
    metadata: { labels: labelsFor(lrp), annotations: podAnnotationsFor(lrp) },
    spec: podSpec(lrp, settings),
  };
}

/** The Deployment for an LRP: its pods have no ordinal, so the container is told no index. */
export function lrpToDeployment(
  lrp: DesiredLrp,
  settings: DeploymentSettings,
): Deployment & { spec: DeploymentSpec } {
  return {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: workloadMeta(lrp),
    spec: {
      replicas: lrp.instances,
      selector: selectorFor(lrp),
      strategy: { type: 'RollingUpdate', rollingUpdate: { maxSurge: '25%', maxUnavailable: '25%' } },
      revisionHistoryLimit: 2,
      template: podTemplateFor(lrp, { ...settings, index: false }),
    },
  };
}
