/** CC's validated desire request → the domain's DesiredLrp (pure). */
import { type DesiredLrp, type Route, ValidationError } from '@opi/domain';
import type { DesireLrpRequest, RoutesRequest } from './schemas.js';
import { runnableOf } from './runnable.js';

export interface DesireDefaults {
  /** The server's default workloads namespace (OPI_NAMESPACE). */
  namespace: string;
  /** Where buildpack droplets are served as images (OPI_DROPLET_REGISTRY). */
  dropletRegistry: string;
  /**
   * Namespaces a request may name besides `namespace` (OPI_ALLOWED_NAMESPACES); 'any' allows every one.
   * Omitted: only `namespace`. Without it anyone who may call the API could aim workloads at kube-system.
   */
  allowedNamespaces?: readonly string[] | 'any';
}

/** The namespace a request's workload goes to: the one it names, if allowed, else the default. */
export function namespaceFor(requested: string | undefined, defaults: DesireDefaults): string {
  if (!requested || requested === defaults.namespace) return defaults.namespace;
  const allowed = defaults.allowedNamespaces ?? [];
  if (allowed === 'any' || allowed.includes(requested)) return requested;
  throw new ValidationError(
    `namespace "${requested}" is not allowed: this server runs workloads in ` +
      `${[defaults.namespace, ...allowed].join(', ')} (OPI_ALLOWED_NAMESPACES)`,
  );
}

/** CC's `{"cf-router": [...]}` as the domain's routes. */
export function routesOf(routes: RoutesRequest | undefined): Route[] {
  return routes?.['cf-router'] ?? [];
}

export function toDesiredLrp(req: DesireLrpRequest, defaults: DesireDefaults): DesiredLrp {
  const { image, command, registry } = runnableOf(req.lifecycle, defaults);
  return {
    processGuid: req.process_guid,
    guid: req.guid,
    version: req.version,
    processType: req.process_type,
    appGuid: req.app_guid,
    appName: req.app_name,
    spaceGuid: req.space_guid,
    spaceName: req.space_name,
    orgGuid: req.organization_guid,
    orgName: req.organization_name,
    namespace: namespaceFor(req.namespace, defaults),
    ports: req.ports,
    environment: req.environment,
    instances: req.instances,
    annotation: req.last_updated,
    healthCheck: {
      type: req.health_check_type,
      httpEndpoint: req.health_check_http_endpoint,
      timeoutMs: req.health_check_timeout_ms,
    },
    startTimeoutMs: req.start_timeout_ms,
    memoryMb: req.memory_mb,
    diskMb: req.disk_mb,
    cpuWeight: req.cpu_weight,
    volumeMounts: req.volume_mounts.map((v) => ({ claimName: v.volume_id, mountPath: v.mount_dir })),
    image,
    command,
    ...(registry ? { registry } : {}),
    userAnnotations: req.user_defined_annotations,
    routes: routesOf(req.routes),
    egressRules: req.egress_rules,
    placementTags: req.placement_tags,
  };
}
