/** The parts of an image's config that staging needs, and the execution metadata CC keeps from them. */
export interface ExposedPort {
  port: number;
  /** `tcp`, `udp` or `sctp`. */
  protocol: string;
}

export interface ImageConfig {
  entrypoint: string[];
  cmd: string[];
  /** Sorted by port, then protocol. */
  exposedPorts: ExposedPort[];
  /** Empty: the image's default (root). */
  user: string;
  env: string[];
}

/** Reads an image config blob (`{"config": {"Entrypoint": …, "Cmd": …, "ExposedPorts": …}}`). */
export function imageConfigFromJson(blob: unknown): ImageConfig {
  const config = isObject(blob) && isObject(blob['config']) ? blob['config'] : {};
  return {
    entrypoint: strings(config['Entrypoint']),
    cmd: strings(config['Cmd']),
    exposedPorts: ports(config['ExposedPorts']),
    user: typeof config['User'] === 'string' ? config['User'] : '',
    env: strings(config['Env']),
  };
}

/**
 * The `execution_metadata` string of a docker staging result. CC starts the app with `cmd` when the
 * process has no command of its own, so the entrypoint goes first, as the container runtime would run it;
 * `ports` become the app's default ports.
 */
export function executionMetadata(
  config: Pick<ImageConfig, 'entrypoint' | 'cmd' | 'exposedPorts' | 'user'>,
): string {
  const metadata: { cmd: string[]; ports: { Port: number; Protocol: string }[]; user?: string } = {
    cmd: [...config.entrypoint, ...config.cmd],
    ports: config.exposedPorts.map((p) => ({ Port: p.port, Protocol: p.protocol })),
  };
  if (config.user !== '') metadata.user = config.user;
  return JSON.stringify(metadata);
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function strings(v: unknown): string[] {
  return Array.isArray(v) ? v.filter((s): s is string => typeof s === 'string') : [];
}

// Keys look like "8080/tcp" (Docker expands EXPOSE ranges into single ports); a bare "8080" means tcp.
function ports(v: unknown): ExposedPort[] {
  if (!isObject(v)) return [];
  const seen = new Map<string, ExposedPort>();
  for (const key of Object.keys(v)) {
    const m = /^(\d+)(?:\/([a-zA-Z]+))?$/.exec(key.trim());
    if (!m) continue;
    const port = Number(m[1]);
    if (port < 1 || port > 65535) continue;
    const protocol = (m[2] ?? 'tcp').toLowerCase();
    seen.set(`${port}/${protocol}`, { port, protocol });
  }
  return [...seen.values()].sort((a, b) => a.port - b.port || a.protocol.localeCompare(b.protocol));
}
