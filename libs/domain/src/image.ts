/** The registry host of an image reference, as the kubelet matches pull credentials against it. */
export const DOCKER_HUB_SERVER = 'https://index.docker.io/v1/';

export function registryServerOf(image: string): string {
  const slash = image.indexOf('/');
  if (slash < 0) return DOCKER_HUB_SERVER;
  const first = image.slice(0, slash);
  // Docker's rule: a first segment with a dot or port, or "localhost", is a registry host.
  if (first.includes('.') || first.includes(':') || first === 'localhost') return first;
  return DOCKER_HUB_SERVER;
}
