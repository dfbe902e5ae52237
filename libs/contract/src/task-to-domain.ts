/** CC's validated task and staging requests → the domain (pure). */
import type { DesiredStaging, DesiredTask } from '@opi/domain';
import { type DesireDefaults, namespaceFor } from './to-domain.js';
import { credentialsFor, runnableOf } from './runnable.js';
import type { StagingRequest, TaskRequest } from './task-schemas.js';

export function toDesiredTask(taskGuid: string, req: TaskRequest, defaults: DesireDefaults): DesiredTask {
  const { image, command, registry } = runnableOf(req.lifecycle, defaults);
  return {
    taskGuid,
    name: req.name,
    appGuid: req.app_guid,
    appName: req.app_name,
    orgGuid: req.org_guid,
    orgName: req.org_name,
    spaceGuid: req.space_guid,
    spaceName: req.space_name,
    namespace: namespaceFor(req.namespace, defaults),
    completionCallback: req.completion_callback,
    spec: {
      image,
      command,
      environment: req.environment,
      memoryMb: req.memory_mb,
      diskMb: req.disk_mb,
      cpuWeight: req.cpu_weight,
      ...(registry ? { registry } : {}),
    },
  };
}

export function toDesiredStaging(
  stagingGuid: string,
  req: StagingRequest,
  defaults: DesireDefaults,
): DesiredStaging {
  const docker = req.lifecycle.docker_lifecycle;
  const bp = req.lifecycle.buildpack_lifecycle;
  let lifecycle: DesiredStaging['lifecycle'];
  if (docker) {
    const registry = credentialsFor(docker.image, docker.registry_username, docker.registry_password);
    lifecycle = { type: 'docker', image: docker.image, ...(registry ? { registry } : {}) };
  } else if (bp) {
    lifecycle = {
      type: 'buildpack',
      appBitsDownloadUri: bp.app_bits_download_uri,
      dropletUploadUri: bp.droplet_upload_uri,
      buildpacks: bp.buildpacks.map((b) => ({
        name: b.name,
        key: b.key,
        url: b.url,
        skipDetect: b.skip_detect,
      })),
      ...(bp.buildpack_cache_download_uri
        ? { buildpackCacheDownloadUri: bp.buildpack_cache_download_uri }
        : {}),
      ...(bp.buildpack_cache_upload_uri ? { buildpackCacheUploadUri: bp.buildpack_cache_upload_uri } : {}),
      ...(bp.buildpack_cache_checksum ? { buildpackCacheChecksum: bp.buildpack_cache_checksum } : {}),
      ...(bp.buildpack_cache_checksum_algorithm
        ? { buildpackCacheChecksumAlgorithm: bp.buildpack_cache_checksum_algorithm }
        : {}),
    };
  } else {
    throw new Error('lifecycle missing');
  }
  return {
    stagingGuid,
    appGuid: req.app_guid,
    appName: req.app_name,
    orgGuid: req.org_guid,
    orgName: req.org_name,
    spaceGuid: req.space_guid,
    spaceName: req.space_name,
    namespace: defaults.namespace,
    completionCallback: req.completion_callback,
    environment: req.environment,
    memoryMb: req.memory_mb,
    diskMb: req.disk_mb,
    cpuWeight: req.cpu_weight,
    lifecycle,
  };
}
