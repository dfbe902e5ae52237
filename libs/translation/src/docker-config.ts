/**
 * Private registry credentials in the `.dockerconfigjson` format the kubelet reads from image pull Secrets.
 */
import type { RegistryCredentials } from '@opi/domain';

// The registry host rule lives in the domain: the API needs it too, when it records credentials.
export { DOCKER_HUB_SERVER, registryServerOf } from '@opi/domain';

function base64(text: string): string {
  return Buffer.from(text, 'utf8').toString('base64');
}

/** The `.dockerconfigjson` document (JSON text, not yet base64) for one registry. */
export function dockerConfigJson(credentials: RegistryCredentials): string {
  const { server, username, password } = credentials;
  return JSON.stringify({
    auths: { [server]: { username, password, auth: base64(`${username}:${password}`) } },
  });
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** Splits a docker `auth` value (base64 of `user:password`); the password may itself hold ':'. */
function splitAuth(auth: string): { username: string; password: string } | undefined {
  const text = Buffer.from(auth, 'base64').toString('utf8');
  const colon = text.indexOf(':');
  return colon < 0 ? undefined : { username: text.slice(0, colon), password: text.slice(colon + 1) };
}

/**
 * The first credentials in a `.dockerconfigjson` document, or undefined when it holds none or is not
 * one. Explicit username/password win over `auth`, as in Docker.
 */
export function credentialsFromDockerConfig(json: string): RegistryCredentials | undefined {
  let parsed: unknown;
  try {
    parsed = JSON.parse(json);
  } catch {
    return undefined;
  }
  if (!isRecord(parsed) || !isRecord(parsed['auths'])) return undefined;
  for (const [server, entry] of Object.entries(parsed['auths'])) {
    if (!isRecord(entry)) continue;
    const { username, password, auth } = entry;
    if (typeof username === 'string' && typeof password === 'string') return { server, username, password };
    const split = typeof auth === 'string' ? splitAuth(auth) : undefined;
    if (split) return { server, ...split };
  }
  return undefined;
}
