/** What a lifecycle runs: the image, its command and pull credentials (shared by apps and tasks). */
import { type RegistryCredentials, registryServerOf } from '@opi/domain';
import type { z } from 'zod';
import type { lifecycleSchema } from './schemas.js';

export interface Runnable {
  image: string;
  command: string[];
  registry: RegistryCredentials | undefined;
}

export function credentialsFor(
  image: string,
  username?: string,
  password?: string,
): RegistryCredentials | undefined {
  if (!username && !password) return undefined;
  return { server: registryServerOf(image), username: username ?? '', password: password ?? '' };
}

export function runnableOf(
  lifecycle: z.infer<typeof lifecycleSchema>,
  defaults: { dropletRegistry: string },
): Runnable {
  const docker = lifecycle.docker_lifecycle;
  if (docker) {
    return {
      image: docker.image,
      command: docker.command,
      registry: credentialsFor(docker.image, docker.registry_username, docker.registry_password),
    };
  }
  const buildpack = lifecycle.buildpack_lifecycle;
  // The schema guarantees one lifecycle; this keeps the types honest.
  if (!buildpack) throw new Error('lifecycle missing');
  // Older CCs: the droplet runs from an image the bits service publishes per droplet.
  return {
    image: `${defaults.dropletRegistry}/cloudfoundry/${buildpack.droplet_guid}:${buildpack.droplet_hash}`,
    command: buildpack.start_command ? ['/bin/sh', '-c', buildpack.start_command] : [],
    registry: undefined,
  };
}
