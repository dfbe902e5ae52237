/** The app container's environment: the request's, plus what Diego gives every CF instance. */
import type { DesiredLrp, EnvVarPair } from '@opi/domain';
import type { EnvVar } from './k8s-objects.js';

function fromField(name: string, fieldPath: string): EnvVar {
  // apiVersion is what the API server defaults it to; spelling it out keeps diffs against the live object clean.
  return { name, valueFrom: { fieldRef: { apiVersion: 'v1', fieldPath } } };
}

/**
 * The instance variables. CF_INSTANCE_INDEX is deliberately absent: a Deployment gives its pods no stable
 * ordinal that is known when the container starts (a StatefulSet would, at the price of one-by-one
 * rollouts). The index CC sees is assigned by the service from the live pods (see assignIndexes) and is
 * not known to the container.
 */
function instanceEnv(lrp: DesiredLrp): EnvVar[] {
  const port = lrp.ports[0];
  const portEnv: EnvVar[] =
    port === undefined
      ? []
      : [
          { name: 'CF_INSTANCE_PORT', value: String(port) },
          { name: 'CF_INSTANCE_ADDR', value: `0.0.0.0:${port}` },
          { name: 'CF_INSTANCE_PORTS', value: JSON.stringify([{ external: port, internal: port }]) },
        ];
  return [...portEnv, ...podIdentityEnv()];
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
export function containerEnv(lrp: DesiredLrp): EnvVar[] {
  const instance = instanceEnv(lrp);
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
