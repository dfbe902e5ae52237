import { RegistryError } from './errors.js';

/** An image reference, normalized as Docker does (`nginx` → registry-1.docker.io, library/nginx:latest). */
export interface ImageRef {
  /** host[:port] the API is served on; Docker Hub's aliases become registry-1.docker.io. */
  registry: string;
  repository: string;
  /** Absent when only a digest was given. */
  tag?: string;
  digest?: string;
  /** What the manifests endpoint is asked for: the digest when there is one (it pins), else the tag. */
  reference: string;
}

export const DOCKER_HUB_REGISTRY = 'registry-1.docker.io';
const DOCKER_HUB_ALIASES = new Set(['docker.io', 'index.docker.io', DOCKER_HUB_REGISTRY]);

// The grammar of github.com/distribution/reference.
const DOMAIN_COMPONENT = '(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9])';
const DOMAIN = new RegExp(
  `^(?:${DOMAIN_COMPONENT}(?:\\.${DOMAIN_COMPONENT})*|\\[[0-9a-fA-F:]+\\])(?::[0-9]+)?$`,
);
const PATH_COMPONENT = /^[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*$/;
const TAG = /^[\w][\w.-]{0,127}$/;
const DIGEST = /^[A-Za-z][A-Za-z0-9]*(?:[-_+.][A-Za-z][A-Za-z0-9]*)*:[0-9a-fA-F]{32,}$/;
const SHA256_DIGEST = /^sha256:[a-f0-9]{64}$/;
const MAX_NAME = 255;

export function parseImageRef(image: string): ImageRef {
  const invalid = (why: string): RegistryError =>
    new RegistryError('invalid-reference', `invalid image reference "${image}": ${why}`);
  if (image === '') throw invalid('it is empty');

  let name = image;
  let digest: string | undefined;
  const at = image.indexOf('@');
  if (at >= 0) {
    name = image.slice(0, at);
    digest = image.slice(at + 1);
    if (!DIGEST.test(digest) || (digest.startsWith('sha256:') && !SHA256_DIGEST.test(digest))) {
      throw invalid(`"${digest}" is not a digest`);
    }
  }

  // Docker's rule: the first segment is a registry host when it has a dot or a port, is "localhost", or
  // has capitals (repositories cannot); otherwise the image is on Docker Hub.
  let registry = 'docker.io';
  let rest = name;
  const slash = name.indexOf('/');
  if (slash >= 0) {
    const first = name.slice(0, slash);
    if (
      first.includes('.') ||
      first.includes(':') ||
      first === 'localhost' ||
      first !== first.toLowerCase()
    ) {
      registry = first;
      rest = name.slice(slash + 1);
    }
  }
  if (!DOMAIN.test(registry)) throw invalid(`"${registry}" is not a registry host`);

  let repository = rest;
  let tag: string | undefined;
  const colon = rest.lastIndexOf(':');
  if (colon >= 0) {
    repository = rest.slice(0, colon);
    tag = rest.slice(colon + 1);
    if (!TAG.test(tag)) throw invalid(`"${tag}" is not a valid tag`);
  }
  if (repository === '') throw invalid('the repository name is missing');
  if (repository !== repository.toLowerCase()) throw invalid('repository names must be lowercase');
  if (!repository.split('/').every((c) => PATH_COMPONENT.test(c))) {
    throw invalid(`"${repository}" is not a valid repository name`);
  }

  if (DOCKER_HUB_ALIASES.has(registry)) {
    registry = DOCKER_HUB_REGISTRY;
    // Official images live under library/ (`nginx` is library/nginx).
    if (!repository.includes('/')) repository = `library/${repository}`;
  }
  if (`${registry}/${repository}`.length > MAX_NAME) throw invalid(`the name is longer than ${MAX_NAME}`);

  if (digest === undefined && tag === undefined) tag = 'latest';
  const ref: ImageRef = { registry, repository, reference: digest ?? tag ?? 'latest' };
  if (tag !== undefined) ref.tag = tag;
  if (digest !== undefined) ref.digest = digest;
  return ref;
}

/**
 * The API's base URL: https unless the registry is on loopback or listed as insecure (as dockerd treats
 * 127.0.0.0/8 and `insecure-registries`). Entries may be `host`, `host:port`, or carry an http(s):// prefix.
 */
export function registryUrl(registry: string, insecureRegistries: readonly string[] = []): string {
  const host = hostnameOf(registry);
  const loopback = host === 'localhost' || host === '[::1]' || /^127\.\d+\.\d+\.\d+$/.test(host);
  const listed = insecureRegistries.some((entry) => {
    const e = entry.replace(/^https?:\/\//, '').replace(/\/+$/, '');
    return e === registry || e === host;
  });
  return `${loopback || listed ? 'http' : 'https'}://${registry}`;
}

function hostnameOf(registry: string): string {
  if (registry.startsWith('[')) return registry.slice(0, registry.indexOf(']') + 1);
  const colon = registry.lastIndexOf(':');
  return colon >= 0 ? registry.slice(0, colon) : registry;
}
