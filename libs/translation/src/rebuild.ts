/**
 * The desired state read back from the cluster: the `cloudfoundry.org/desired_lrp` annotation and the
 * routes, egress rules and placement tags beside it (kept-annotations.ts), checked field by field (anyone
 * with edit rights can change them), with instances and `last_updated` taken from the workload's own
 * fields.
 */
import type { DesiredLrp, HealthCheckType, VolumeMount } from '@opi/domain';
import type { Deployment, Secret, StatefulSet } from '@opi/kube-objects';
import { APP_CONTAINER } from './deployment.js';
import { ANNOTATION_DESIRED_LRP, ANNOTATION_LAST_UPDATED, SPEC_IN_CONTAINER } from './labels.js';
import { credentialsFromDockerConfig } from './docker-config.js';
import { isCount, isRecord, isString, stringMap } from './json-fields.js';
import { keptFromAnnotations } from './kept-annotations.js';
import { DOCKER_CONFIG_JSON_KEY } from './pull-secret.js';

function healthCheckOf(value: unknown): DesiredLrp['healthCheck'] | undefined {
  if (!isRecord(value)) return undefined;
  const { type, httpEndpoint, timeoutMs } = value;
  const types: readonly unknown[] = ['port', 'http', 'process', 'none'] satisfies HealthCheckType[];
  if (!types.includes(type) || !isString(httpEndpoint) || !isCount(timeoutMs)) return undefined;
  return { type: type as HealthCheckType, httpEndpoint, timeoutMs };
}

function volumeMountsOf(value: unknown): VolumeMount[] | undefined {
  if (!Array.isArray(value)) return undefined;
  const mounts: VolumeMount[] = [];
  for (const m of value) {
    if (!isRecord(m) || !isString(m['claimName']) || !isString(m['mountPath'])) return undefined;
    mounts.push({ claimName: m['claimName'], mountPath: m['mountPath'] });
  }
  return mounts;
}

const STRING_FIELDS = [
  'processGuid',
  'guid',
  'version',
  'processType',
  'appGuid',
  'appName',
  'spaceGuid',
  'spaceName',
  'orgGuid',
  'orgName',
  'namespace',
  'annotation',
  'image',
] as const;
const COUNT_FIELDS = ['instances', 'startTimeoutMs', 'memoryMb', 'diskMb', 'cpuWeight'] as const;

/**
 * A DesiredLrp from its stored JSON (without registry, routes, egress rules and placement tags, which
 * are not in it), or undefined if any field is missing or wrong.
 */
export function parseDesiredLrp(
  json: string,
): Omit<DesiredLrp, 'registry' | 'routes' | 'egressRules' | 'placementTags'> | undefined {
  let raw: unknown;
  try {
    raw = JSON.parse(json);
  } catch {
    return undefined;
  }
  if (!isRecord(raw)) return undefined;
  if (!STRING_FIELDS.every((f) => isString(raw[f])) || !COUNT_FIELDS.every((f) => isCount(raw[f]))) {
    return undefined;
  }
  const { ports } = raw;
  // Too large for the annotation, environment and command were left in the container (desiredLrpJson).
  const inContainer = raw[SPEC_IN_CONTAINER] === true;
  const command = inContainer ? [] : raw['command'];
  if (!Array.isArray(ports) || !ports.every(isCount)) return undefined;
  if (!Array.isArray(command) || !command.every(isString)) return undefined;
  const environment = inContainer ? {} : stringMap(raw['environment']);
  const userAnnotations = stringMap(raw['userAnnotations']);
  const healthCheck = healthCheckOf(raw['healthCheck']);
  const volumeMounts = volumeMountsOf(raw['volumeMounts']);
  if (!environment || !userAnnotations || !healthCheck || !volumeMounts) return undefined;
  const s = (f: (typeof STRING_FIELDS)[number]) => raw[f] as string;
  const n = (f: (typeof COUNT_FIELDS)[number]) => raw[f] as number;
  // Built field by field: unknown fields (from a newer or tampered writer) do not leak into the result.
  return {
    processGuid: s('processGuid'),
    guid: s('guid'),
    version: s('version'),
    processType: s('processType'),
    appGuid: s('appGuid'),
    appName: s('appName'),
    spaceGuid: s('spaceGuid'),
    spaceName: s('spaceName'),
    orgGuid: s('orgGuid'),
    orgName: s('orgName'),
    namespace: s('namespace'),
    ports,
    environment,
    instances: n('instances'),
    annotation: s('annotation'),
    healthCheck,
    startTimeoutMs: n('startTimeoutMs'),
    memoryMb: n('memoryMb'),
    diskMb: n('diskMb'),
    cpuWeight: n('cpuWeight'),
    volumeMounts,
    image: s('image'),
    command,
    userAnnotations,
  };
}

/** The variables containerEnv adds to the request's; they are not the request's own. */
const INSTANCE_VARS = new Set(['CF_INSTANCE_PORT', 'CF_INSTANCE_ADDR', 'CF_INSTANCE_PORTS']);

/** Environment and command as the app container holds them (for a desired LRP too large to annotate). */
function containerSpecOf(
  workload: Deployment | StatefulSet,
  ports: number[],
): Pick<DesiredLrp, 'environment' | 'command'> {
  const c = workload.spec?.template.spec?.containers.find((x) => x.name === APP_CONTAINER);
  const entries: [string, string][] = [];
  for (const e of c?.env ?? []) {
    if (e.value === undefined || e.valueFrom || INSTANCE_VARS.has(e.name)) continue;
    // PORT is added when the request has none; the same value from the request changes nothing.
    if (e.name === 'PORT' && e.value === String(ports[0])) continue;
    entries.push([e.name, e.value]);
  }
  // fromEntries: a variable named __proto__ stays a variable.
  return { environment: Object.fromEntries(entries), command: c?.command ?? [] };
}

/**
 * The DesiredLrp a workload made by lrpToDeployment or lrpToStatefulSet runs, or undefined when it
 * carries no valid desired state, or not all of it (a kept field too large for its annotation: CC then
 * desires the LRP again, see kept-annotations.ts). Instances come from `spec.replicas` and the annotation
 * from `cloudfoundry.org/last_updated`, what the workload runs with; registry credentials come from the
 * image pull Secret when it is given, since they are never stored on the workload.
 */
export function lrpFromWorkload(workload: Deployment | StatefulSet, secret?: Secret): DesiredLrp | undefined {
  const annotations = workload.metadata.annotations ?? {};
  const json = annotations[ANNOTATION_DESIRED_LRP];
  const stored = json === undefined ? undefined : parseDesiredLrp(json);
  const kept = keptFromAnnotations(annotations);
  if (!stored || !kept) return undefined;
  const replicas = workload.spec?.replicas;
  const lastUpdated = annotations[ANNOTATION_LAST_UPDATED];
  const dockerConfig = secret?.data?.[DOCKER_CONFIG_JSON_KEY];
  const registry =
    dockerConfig === undefined
      ? undefined
      : credentialsFromDockerConfig(Buffer.from(dockerConfig, 'base64').toString('utf8'));
  return {
    ...stored,
    ...kept,
    ...(json?.includes(`"${SPEC_IN_CONTAINER}":true`) ? containerSpecOf(workload, stored.ports) : {}),
    instances: isCount(replicas) ? replicas : stored.instances,
    annotation: lastUpdated ?? stored.annotation,
    ...(registry ? { registry } : {}),
  };
}
