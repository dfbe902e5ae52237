/** CC's validated desire request → the domain's DesiredLrp (pure). */
import { type DesiredLrp, registryServerOf } from '@opi/domain';
import type { DesireLrpRequest } from './schemas.js';

export interface DesireDefaults {
  /** The server's default workloads namespace (OPI_NAMESPACE). */
  namespace: string;
  /** Where buildpack droplets are served as images (OPI_DROPLET_REGISTRY). */
  dropletRegistry: string;
}

export function toDesiredLrp(req: DesireLrpRequest, defaults: DesireDefaults): DesiredLrp {
  const docker = req.lifecycle.docker_lifecycle;
  const buildpack = req.lifecycle.buildpack_lifecycle;
  let image: string;
  let command: string[];
  let registry: DesiredLrp['registry'];
  if (docker) {
    image = docker.image;
    command = docker.command;
    if (docker.registry_username || docker.registry_password) {
      registry = {
        server: registryServerOf(docker.image),
        username: docker.registry_username ?? '',
        password: docker.registry_password ?? '',
      };
    }
  } else if (buildpack) {
    // Older CCs: the droplet runs from an image the bits service publishes per droplet.
    image = `${defaults.dropletRegistry}/cloudfoundry/${buildpack.droplet_guid}:${buildpack.droplet_hash}`;
    command = buildpack.start_command ? ['/bin/sh', '-c', buildpack.start_command] : [];
  } else {
    // The schema guarantees one lifecycle; this keeps the types honest.
    throw new Error('lifecycle missing');
  }
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
    namespace: req.namespace || defaults.namespace,
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
  };
}
