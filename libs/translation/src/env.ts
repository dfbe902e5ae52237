/** The app container's environment: the request's, plus what Diego gives every CF instance. */
import type { DesiredLrp, EnvVarPair } from '@opi/domain';
import type { EnvVar } from '@opi/kube-objects';

function fromField(name: string, fieldPath: string): EnvVar {
  // apiVersion is what the API server defaults it to; spelling it out keeps diffs against the live object clean.
  return { name, valueFrom: { fieldRef: { apiVersion: 'v1', fieldPath } } };
}

/** Where a StatefulSet's pod finds its ordinal (Kubernetes 1.28 and later). */
export const POD_INDEX_LABEL = 'apps.kubernetes.io/pod-index';

/** What the container is told of its instance besides the pod's identity. */
export interface InstanceEnvOptions {
  /**
   * CF_INSTANCE_INDEX and INSTANCE_INDEX from the pod's ordinal, INSTANCE_GUID from its uid: only a
   * StatefulSet's pods have an ordinal. A Deployment's index is assigned by the service from the live pods
   * (see assignIndexMap) and is not known to the container.
   */
  index: boolean;
}

/** The instance variables: ports, the pod's identity and, where it has one, its index. */
function instanceEnv(lrp: DesiredLrp, opts: InstanceEnvOptions): EnvVar[] {
  const port = lrp.ports[0];
  const portEnv: EnvVar[] =
    port === undefined
      ? []
      : [
          { name: 'CF_INSTANCE_PORT', value: String(port) },
          { name: 'CF_INSTANCE_ADDR', value: `0.0.0.0:${port}` },
          { name: 'CF_INSTANCE_PORTS', value: JSON.stringify([{ external: port, internal: port }]) },
        ];
  const index = opts.index
    ? [
        fromField('CF_INSTANCE_INDEX', `metadata.labels['${POD_INDEX_LABEL}']`),
        fromField('INSTANCE_INDEX', `metadata.labels['${POD_INDEX_LABEL}']`),
        fromField('INSTANCE_GUID', 'metadata.uid'),
      ]
    : [];
  return [...portEnv, ...podIdentityEnv(), ...index];
}

/** The pod's own name, uid and IP from the downward API, as Diego gives every container, tasks' too. */
export function podIdentityEnv(): EnvVar[] {
  return [
    fromField('POD_NAME', 'metadata.name'),
    fromField('CF_INSTANCE_GUID', 'metadata.uid'),
    fromField('CF_INSTANCE_IP', 'status.podIP'),
    fromField('CF_INSTANCE_INTERNAL_IP', 'status.podIP'),
  ];
}

/**
 * A job's environment: the request's pairs in their order (CC sends tasks and staging an array, and its
 * order is the user's), then the service's own variables, which replace request variables of the same name.
 */
export function pairsEnv(pairs: readonly EnvVarPair[], own: readonly EnvVar[]): EnvVar[] {
  const reserved = new Set(own.map((e) => e.name));
  return [...pairs.filter((p) => !reserved.has(p.name)).map(({ name, value }) => ({ name, value })), ...own];
}

/**
 * The request's variables sorted by name (a stable order keeps the pod template, and so the rollout,
 * unchanged when CC sends the same map in another order), then `PORT` unless the request sets it, then
 * the instance variables, which replace request variables of the same name as Diego's do.
 */
export function containerEnv(lrp: DesiredLrp, opts: InstanceEnvOptions = { index: false }): EnvVar[] {
  const instance = instanceEnv(lrp, opts);
  const reserved = new Set(instance.map((e) => e.name));
  const names = Object.keys(lrp.environment)
    .filter((name) => !reserved.has(name))
    .sort();
  const requested: EnvVar[] = names.map((name) => ({ name, value: lrp.environment[name] ?? '' }));
  const port = lrp.ports[0];
  const portEnv: EnvVar[] =
    port !== undefined && !Object.hasOwn(lrp.environment, 'PORT')
      ? [{ name: 'PORT', value: String(port) }]
      : [];
  return [...requested, ...portEnv, ...instance];
}
