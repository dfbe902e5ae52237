/**
 * A real Distribution registry (Debian's docker-registry, see scripts/docker-registry.sh) for tests, on a
 * loopback port with throw-away storage, and a way to push tiny but real images to it without Docker.
 */
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { gzipSync } from 'node:zlib';
import bcrypt from 'bcryptjs';
import { eventually } from './eventually.js';

const repo = resolve(dirname(fileURLToPath(import.meta.url)), '../..');

export interface Credentials {
  username: string;
  password: string;
}

export interface TestRegistry {
  /** http://127.0.0.1:<port> */
  url: string;
  /** 127.0.0.1:<port>, the registry part of image references. */
  host: string;
  /** Set when the registry requires them (htpasswd); pushImage uses them. */
  credentials?: Credentials;
  stop(): Promise<void>;
}

let binary: string | undefined;

/** Starts a registry; with `htpasswd` every request needs basic auth with those credentials. */
export async function startRegistry(options: { htpasswd?: Credentials } = {}): Promise<TestRegistry> {
  binary ??= execFileSync(join(repo, 'scripts/docker-registry.sh'), { encoding: 'utf8' }).trim();
  const dir = await mkdtemp(join(tmpdir(), 'registry-'));
  const config: Record<string, unknown> = {
    version: '0.1',
    log: { level: 'info', formatter: 'text', accesslog: { disabled: true } },
    storage: {
      filesystem: { rootdirectory: join(dir, 'data') },
      // Uploads never linger in a test; the purger would only log.
      maintenance: { uploadpurging: { enabled: false } },
    },
    // Port 0: the registry picks a free port and logs it, so parallel suites cannot collide.
    http: { addr: '127.0.0.1:0', secret: 'test-only-secret' },
  };
  if (options.htpasswd) {
    const { username, password } = options.htpasswd;
    // The registry only accepts bcrypt lines; a low cost keeps each authenticated request fast.
    await writeFile(join(dir, 'htpasswd'), `${username}:${bcrypt.hashSync(password, 4)}\n`);
    config['auth'] = { htpasswd: { realm: 'opi-test', path: join(dir, 'htpasswd') } };
  }
  // YAML is a superset of JSON, so the registry reads this as its config.yml.
  await writeFile(join(dir, 'config.yml'), JSON.stringify(config));

  const child = spawn(binary, ['serve', join(dir, 'config.yml')], { stdio: ['ignore', 'pipe', 'pipe'] });
  let log = '';
  let exited: string | undefined;
  child.stdout.on('data', (b: Buffer) => (log += b.toString()));
  child.stderr.on('data', (b: Buffer) => (log += b.toString()));
  child.on('exit', (code, signal) => (exited = `exited (${signal ?? code ?? '?'})`));

  const stop = async (): Promise<void> => {
    await kill(child);
    await rm(dir, { recursive: true, force: true });
  };
  try {
    const host = await eventually(
      async () => {
        if (exited) throw new Error(`docker-registry ${exited}:\n${log}`);
        return /listening on (127\.0\.0\.1:\d+)/.exec(log)?.[1];
      },
      'docker-registry to listen',
      15_000,
    );
    const url = `http://${host}`;
    // 401 counts: it is the registry answering, asking for the credentials.
    await eventually(async () => {
      const res = await fetch(`${url}/v2/`);
      return res.status === 200 || res.status === 401;
    }, `docker-registry at ${url}/v2/`);
    const registry: TestRegistry = { url, host, stop };
    if (options.htpasswd) registry.credentials = options.htpasswd;
    return registry;
  } catch (e) {
    await stop();
    throw e;
  }
}

async function kill(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const gone = new Promise<void>((r) => {
    child.once('exit', () => {
      r();
    });
  });
  child.kill('SIGTERM');
  const timer = setTimeout(() => child.kill('SIGKILL'), 5000);
  await gone;
  clearTimeout(timer);
}

/** The image config's runtime part, as Docker writes it. */
export interface ContainerConfig {
  Entrypoint?: string[];
  Cmd?: string[];
  ExposedPorts?: Record<string, object>;
  User?: string;
  Env?: string[];
}

export interface PushedImage {
  /** The manifest's digest (`sha256:…`): the image is `<host>/<repo>@<digest>`. */
  digest: string;
  configDigest: string;
  mediaType: string;
  size: number;
}

export const DOCKER_MANIFEST = 'application/vnd.docker.distribution.manifest.v2+json';
export const DOCKER_MANIFEST_LIST = 'application/vnd.docker.distribution.manifest.list.v2+json';
export const OCI_INDEX = 'application/vnd.oci.image.index.v1+json';

/**
 * Pushes `<repo>:<tag>`: one gzip'd layer holding a small file, a config with `config`, and a Docker v2
 * schema 2 manifest, through the blob upload API as `docker push` does.
 */
export async function pushImage(
  registry: TestRegistry,
  repository: string,
  tag: string,
  config: ContainerConfig,
  architecture = 'amd64',
): Promise<PushedImage> {
  const layerTar = tar([{ name: 'hello.txt', content: Buffer.from(`hello from ${repository}:${tag}\n`) }]);
  const layer = gzipSync(layerTar);
  const configBlob = Buffer.from(
    JSON.stringify({
      architecture,
      os: 'linux',
      created: '2024-01-01T00:00:00Z',
      config,
      rootfs: { type: 'layers', diff_ids: [sha256(layerTar)] },
      history: [{ created: '2024-01-01T00:00:00Z', created_by: 'test/support/registry.ts' }],
    }),
  );
  await pushBlob(registry, repository, layer);
  await pushBlob(registry, repository, configBlob);
  const manifest = {
    schemaVersion: 2,
    mediaType: DOCKER_MANIFEST,
    config: {
      mediaType: 'application/vnd.docker.container.image.v1+json',
      size: configBlob.length,
      digest: sha256(configBlob),
    },
    layers: [
      {
        mediaType: 'application/vnd.docker.image.rootfs.diff.tar.gzip',
        size: layer.length,
        digest: sha256(layer),
      },
    ],
  };
  const pushed = await putManifest(registry, repository, tag, DOCKER_MANIFEST, manifest);
  return { ...pushed, configDigest: sha256(configBlob) };
}

/** Pushes `<repo>:<tag>` as an index (a Docker manifest list by default) of images already in `repo`. */
export async function pushIndex(
  registry: TestRegistry,
  repository: string,
  tag: string,
  entries: { image: PushedImage; os: string; architecture: string }[],
  mediaType: typeof DOCKER_MANIFEST_LIST | typeof OCI_INDEX = DOCKER_MANIFEST_LIST,
): Promise<Omit<PushedImage, 'configDigest'>> {
  return putManifest(registry, repository, tag, mediaType, {
    schemaVersion: 2,
    mediaType,
    manifests: entries.map((e) => ({
      mediaType: e.image.mediaType,
      size: e.image.size,
      digest: e.image.digest,
      platform: { os: e.os, architecture: e.architecture },
    })),
  });
}

async function pushBlob(registry: TestRegistry, repository: string, blob: Buffer): Promise<void> {
  const start = await call(registry, 'POST', `/v2/${repository}/blobs/uploads/`, 202);
  const location = start.headers.get('location');
  if (!location) throw new Error('blob upload started without a Location');
  // The upload URL carries its own state in the query; the digest completes it in one PUT.
  const url = new URL(location, registry.url);
  url.searchParams.set('digest', sha256(blob));
  await call(registry, 'PUT', url.pathname + url.search, 201, blob, 'application/octet-stream');
}

async function putManifest(
  registry: TestRegistry,
  repository: string,
  tag: string,
  mediaType: string,
  manifest: object,
): Promise<Omit<PushedImage, 'configDigest'>> {
  const body = Buffer.from(JSON.stringify(manifest));
  await call(registry, 'PUT', `/v2/${repository}/manifests/${tag}`, 201, body, mediaType);
  return { digest: sha256(body), mediaType, size: body.length };
}

async function call(
  registry: TestRegistry,
  method: string,
  path: string,
  want: number,
  body?: Buffer,
  contentType?: string,
): Promise<Response> {
  const headers: Record<string, string> = {};
  if (contentType) headers['content-type'] = contentType;
  if (registry.credentials) {
    const { username, password } = registry.credentials;
    headers['authorization'] = `Basic ${Buffer.from(`${username}:${password}`).toString('base64')}`;
  }
  const res = await fetch(`${registry.url}${path}`, { method, headers, ...(body && { body }) });
  if (res.status !== want) {
    throw new Error(`${method} ${path}: ${res.status} (wanted ${want}): ${await res.text()}`);
  }
  await res.body?.cancel();
  return res;
}

function sha256(b: Buffer): string {
  return `sha256:${createHash('sha256').update(b).digest('hex')}`;
}

/** A ustar archive of regular files; enough for a layer the registry stores but never unpacks. */
function tar(files: { name: string; content: Buffer }[]): Buffer {
  const blocks: Buffer[] = [];
  for (const f of files) {
    const header = Buffer.alloc(512);
    // Numeric fields are zero-padded octal ending in NUL, each filling its field.
    const field = (value: number, offset: number, length: number): void => {
      header.write(`${value.toString(8).padStart(length - 1, '0')}\0`, offset, length, 'ascii');
    };
    header.write(f.name, 0, 100, 'utf8');
    field(0o644, 100, 8); // mode
    field(0, 108, 8); // uid
    field(0, 116, 8); // gid
    field(f.content.length, 124, 12);
    field(1_704_067_200, 136, 12); // mtime: fixed, so the same input gives the same digest
    header.write('0', 156, 'ascii'); // regular file
    header.write('ustar\u000000', 257, 'ascii');
    // The checksum is summed with its own field read as spaces, then written as 6 digits, NUL, space.
    header.fill(' ', 148, 156);
    const sum = header.reduce((a, b) => a + b, 0);
    header.write(`${sum.toString(8).padStart(6, '0')}\0 `, 148, 8, 'ascii');
    blocks.push(header, f.content, Buffer.alloc((512 - (f.content.length % 512)) % 512));
  }
  blocks.push(Buffer.alloc(1024)); // two zero blocks end the archive
  return Buffer.concat(blocks);
}
