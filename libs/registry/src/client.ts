/**
 * Reads an image's config through the OCI distribution API: the manifest (through an index to one
 * platform's manifest when the tag is multi-arch), then the config blob it names. Every request has its
 * own timeout; failures become RegistryErrors whose messages CC can show its user.
 */
import { createHash } from 'node:crypto';
import type { RegistryCredentials } from '@opi/domain';
import { imageConfigFromJson, type ImageConfig } from './config.js';
import { RegistryError } from './errors.js';
import { parseImageRef, registryUrl, type ImageRef } from './reference.js';

export type RegistryAuth = Pick<RegistryCredentials, 'username' | 'password'>;

export interface Platform {
  os: string;
  architecture: string;
}

export interface RegistryOptions {
  /** Registries (`host` or `host:port`) spoken to over plain http; loopback ones always are. */
  insecureRegistries?: readonly string[];
  /** For each request, body included. Default 15 s. */
  timeoutMs?: number;
  /** Which image of an index to read. Default linux/amd64 (what the cluster's nodes run). */
  platform?: Platform;
}

export const DEFAULT_TIMEOUT_MS = 15_000;

export const MEDIA_TYPES = {
  dockerManifest: 'application/vnd.docker.distribution.manifest.v2+json',
  dockerManifestList: 'application/vnd.docker.distribution.manifest.list.v2+json',
  ociManifest: 'application/vnd.oci.image.manifest.v1+json',
  ociIndex: 'application/vnd.oci.image.index.v1+json',
} as const;

// Digests from a registry's answers go into URLs; nothing else may pass as one.
const DIGEST = /^[A-Za-z][A-Za-z0-9]*(?:[-_+.][A-Za-z][A-Za-z0-9]*)*:[0-9a-fA-F]{32,}$/;
const MANIFEST_ACCEPT = Object.values(MEDIA_TYPES).join(', ');
// Manifests and configs are kilobytes; a cap keeps a hostile or broken registry from filling memory.
const MAX_BODY_BYTES = 8 * 1024 * 1024;

/** The config of `image` (tag or digest; an index resolves to the wanted platform's image). */
export async function fetchImageConfig(
  image: string,
  credentials?: RegistryAuth,
  options: RegistryOptions = {},
): Promise<ImageConfig> {
  const ref = parseImageRef(image);
  const session = new Session(image, ref, credentials, options);

  let manifest = await session.manifest(ref.reference);
  if (isIndex(manifest)) {
    const chosen = pickPlatform(manifest, options.platform ?? { os: 'linux', architecture: 'amd64' });
    if (!chosen) throw session.malformed('an image index that lists no images');
    if (!DIGEST.test(chosen)) throw session.malformed('an image index with an invalid digest');
    manifest = await session.manifest(chosen);
    if (isIndex(manifest)) throw session.malformed('an image index where an image manifest was expected');
  }
  const config = manifest.json['config'];
  const digest = isObject(config) ? config['digest'] : undefined;
  if (typeof digest !== 'string' || !DIGEST.test(digest)) {
    throw session.malformed('a manifest without a config');
  }
  const blob = await session.blob(digest);
  return imageConfigFromJson(blob);
}

interface Manifest {
  mediaType: string;
  json: Record<string, unknown>;
}

function isIndex(m: Manifest): boolean {
  return m.mediaType === MEDIA_TYPES.dockerManifestList || m.mediaType === MEDIA_TYPES.ociIndex;
}

/** The wanted platform's digest; else the first real image (attestations say unknown/unknown). */
function pickPlatform(index: Manifest, want: Platform): string | undefined {
  const entries = Array.isArray(index.json['manifests']) ? index.json['manifests'].filter(isObject) : [];
  const platformOf = (e: Record<string, unknown>): Record<string, unknown> =>
    isObject(e['platform']) ? e['platform'] : {};
  const digestOf = (e: Record<string, unknown> | undefined): string | undefined =>
    typeof e?.['digest'] === 'string' ? e['digest'] : undefined;
  const exact = entries.find(
    (e) => platformOf(e)['os'] === want.os && platformOf(e)['architecture'] === want.architecture,
  );
  return (
    digestOf(exact) ??
    digestOf(entries.find((e) => platformOf(e)['os'] !== 'unknown')) ??
    digestOf(entries[0])
  );
}

/** One image read: the registry, the credentials and the token got on the way. */
class Session {
  private readonly base: string;
  private readonly timeoutMs: number;
  private authorization: string | undefined;
  private challenged = false;

  constructor(
    private readonly image: string,
    private readonly ref: ImageRef,
    private readonly credentials: RegistryAuth | undefined,
    options: RegistryOptions,
  ) {
    this.base = `${registryUrl(ref.registry, options.insecureRegistries)}/v2/${ref.repository}`;
    this.timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  }

  async manifest(reference: string): Promise<Manifest> {
    const res = await this.get(`${this.base}/manifests/${reference}`, MANIFEST_ACCEPT);
    if (res.status === 404) {
      await res.body?.cancel();
      throw this.notFound();
    }
    const body = await this.body(res);
    if (reference.includes(':')) this.verify(reference, body, 'manifest');
    let json: unknown;
    try {
      json = JSON.parse(body.toString('utf8'));
    } catch {
      throw this.malformed('a manifest that is not JSON');
    }
    if (!isObject(json)) throw this.malformed('a manifest that is not a JSON object');
    return { mediaType: mediaTypeOf(res, json), json };
  }

  async blob(digest: string): Promise<unknown> {
    // Registries often redirect blobs to object storage; fetch follows and drops our Authorization there.
    const res = await this.get(`${this.base}/blobs/${digest}`, 'application/json, */*');
    if (res.status === 404) {
      await res.body?.cancel();
      throw new RegistryError(
        'not-found',
        `the config of image "${this.image}" (${digest}) is missing from registry ${this.ref.registry}`,
        404,
      );
    }
    const body = await this.body(res);
    this.verify(digest, body, 'config');
    try {
      return JSON.parse(body.toString('utf8'));
    } catch {
      throw this.malformed('an image config that is not JSON');
    }
  }

  malformed(what: string): RegistryError {
    return new RegistryError(
      'unexpected',
      `registry ${this.ref.registry} sent ${what} for image "${this.image}"`,
    );
  }

  private notFound(): RegistryError {
    return new RegistryError(
      'not-found',
      `image "${this.image}" not found in registry ${this.ref.registry}`,
      404,
    );
  }

  private denied(status: number): RegistryError {
    return new RegistryError(
      'denied',
      `access to image "${this.image}" denied (check registry credentials)`,
      status,
    );
  }

  /** A GET that answers an auth challenge once, then maps auth and server failures to errors. */
  private async get(url: string, accept: string): Promise<Response> {
    let res = await this.send(url, accept);
    if (res.status === 401 && !this.challenged) {
      this.challenged = true;
      const challenge = res.headers.get('www-authenticate') ?? '';
      await res.body?.cancel();
      if (await this.authenticate(challenge)) res = await this.send(url, accept);
    }
    if (res.status === 401 || res.status === 403) {
      await res.body?.cancel();
      throw this.denied(res.status);
    }
    if (res.status !== 200 && res.status !== 404) throw await this.unexpected(res, 'registry');
    return res;
  }

  private async send(url: string, accept: string): Promise<Response> {
    const headers: Record<string, string> = { accept };
    if (this.authorization) headers['authorization'] = this.authorization;
    return this.fetch(url, { headers }, `registry ${this.ref.registry}`);
  }

  /** Sets the Authorization header the challenge asks for; false when there is nothing to try. */
  private async authenticate(header: string): Promise<boolean> {
    const challenge = parseChallenge(header);
    if (challenge?.scheme === 'basic') {
      if (!this.credentials) return false;
      this.authorization = basic(this.credentials);
      return true;
    }
    if (challenge?.scheme !== 'bearer') return false;
    const realm = challenge.params['realm'];
    if (!realm || !/^https?:\/\//i.test(realm)) {
      throw new RegistryError(
        'unexpected',
        `registry ${this.ref.registry} asked for a token without saying where to get it`,
        401,
      );
    }
    let url: URL;
    try {
      url = new URL(realm);
    } catch {
      throw new RegistryError('unexpected', `registry ${this.ref.registry} named an invalid token service`);
    }
    const service = challenge.params['service'];
    if (service) url.searchParams.set('service', service);
    url.searchParams.set('scope', challenge.params['scope'] ?? `repository:${this.ref.repository}:pull`);

    const headers: Record<string, string> = { accept: 'application/json' };
    if (this.credentials) headers['authorization'] = basic(this.credentials);
    const res = await this.fetch(
      url.href,
      { headers },
      `registry ${this.ref.registry} (token service ${url.host})`,
    );
    if (res.status === 401 || res.status === 403) {
      await res.body?.cancel();
      throw this.denied(res.status);
    }
    if (res.status !== 200) throw await this.unexpected(res, 'token service of registry');
    let answer: unknown;
    try {
      answer = JSON.parse((await this.body(res)).toString('utf8'));
    } catch {
      answer = undefined;
    }
    const token = isObject(answer) ? (answer['token'] ?? answer['access_token']) : undefined;
    if (typeof token !== 'string' || token === '') {
      throw new RegistryError(
        'unexpected',
        `the token service of registry ${this.ref.registry} answered without a token`,
      );
    }
    this.authorization = `Bearer ${token}`;
    return true;
  }

  private async fetch(url: string, init: RequestInit, what: string): Promise<Response> {
    try {
      return await fetch(url, { ...init, redirect: 'follow', signal: AbortSignal.timeout(this.timeoutMs) });
    } catch (e) {
      throw new RegistryError('unreachable', `${what} is unreachable: ${this.causeOf(e)}`);
    }
  }

  /** The body, read under the request's timeout and size cap. */
  private async body(res: Response): Promise<Buffer> {
    const declared = Number(res.headers.get('content-length') ?? '0');
    if (declared > MAX_BODY_BYTES) {
      await res.body?.cancel();
      throw this.malformed(`an answer of ${declared} bytes, more than a manifest or config can be,`);
    }
    const chunks: Uint8Array[] = [];
    let size = 0;
    try {
      // undici types the body as a stream of any; it carries bytes.
      const reader: ReadableStreamDefaultReader<Uint8Array> | undefined = res.body?.getReader();
      for (;;) {
        if (!reader) break;
        const { done, value } = await reader.read();
        if (done) break;
        size += value.byteLength;
        if (size > MAX_BODY_BYTES) {
          await reader.cancel();
          throw this.malformed(
            `an answer of more than ${MAX_BODY_BYTES} bytes, more than a manifest or config can be,`,
          );
        }
        chunks.push(value);
      }
    } catch (e) {
      if (e instanceof RegistryError) throw e;
      throw new RegistryError(
        'unreachable',
        `registry ${this.ref.registry} is unreachable: ${this.causeOf(e)}`,
      );
    }
    return Buffer.concat(chunks);
  }

  /** Content addressing: what came for a sha256 digest must hash to it. */
  private verify(digest: string, body: Buffer, what: string): void {
    if (!digest.startsWith('sha256:')) return;
    const actual = `sha256:${createHash('sha256').update(body).digest('hex')}`;
    if (actual !== digest.toLowerCase())
      throw this.malformed(`a ${what} that does not match its digest ${digest}`);
  }

  private async unexpected(res: Response, who: string): Promise<RegistryError> {
    let detail = '';
    try {
      // Registries explain rate limits and the like in {"errors": [{"code", "message"}]}.
      const text = new TextDecoder().decode((await this.body(res)).subarray(0, 4096));
      const json: unknown = JSON.parse(text);
      const first =
        isObject(json) && Array.isArray(json['errors']) ? (json['errors'] as unknown[])[0] : undefined;
      const message = isObject(first) ? first['message'] : undefined;
      if (typeof message === 'string' && message !== '') detail = `: ${this.scrub(message).slice(0, 200)}`;
    } catch {
      // No explanation; the status says enough.
    }
    return new RegistryError(
      'unexpected',
      `unexpected answer ${res.status} from ${who} ${this.ref.registry}${detail}`,
      res.status,
    );
  }

  private causeOf(e: unknown): string {
    // Duck-typed: fetch's errors and DOMExceptions may come from another realm than this module's Error.
    const err = asError(e);
    if (err?.name === 'TimeoutError' || err?.name === 'AbortError')
      return `no answer within ${this.timeoutMs} ms`;
    // fetch wraps the socket's error ("fetch failed", cause: connect ECONNREFUSED …); with several
    // addresses to try the cause is an AggregateError of them.
    let cause = asError(err?.cause) ?? err;
    if (Array.isArray(cause?.errors) && cause.errors.length > 0) cause = asError(cause.errors[0]) ?? cause;
    const text = cause ? cause.message || cause.code || cause.name || 'unknown error' : String(e);
    return this.scrub(text);
  }

  /** Anything that came from the outside could echo the password; it must not reach CC. */
  private scrub(text: string): string {
    const password = this.credentials?.password;
    return password ? text.split(password).join('***') : text;
  }
}

function basic(c: RegistryAuth): string {
  return `Basic ${Buffer.from(`${c.username}:${c.password}`).toString('base64')}`;
}

function mediaTypeOf(res: Response, json: Record<string, unknown>): string {
  const header = (res.headers.get('content-type') ?? '').split(';')[0]?.trim() ?? '';
  if ((Object.values(MEDIA_TYPES) as string[]).includes(header)) return header;
  if (typeof json['mediaType'] === 'string') return json['mediaType'];
  // OCI allows mediaType to be left out; the shape tells.
  return Array.isArray(json['manifests']) ? MEDIA_TYPES.ociIndex : MEDIA_TYPES.ociManifest;
}

export interface Challenge {
  scheme: string;
  params: Record<string, string>;
}

/** `Bearer realm="https://auth.example/token",service="x",scope="repository:a:pull"` → scheme and params. */
export function parseChallenge(header: string): Challenge | undefined {
  const m = /^\s*([A-Za-z][\w-]*)\s*(.*)$/s.exec(header);
  if (!m?.[1]) return undefined;
  const params: Record<string, string> = {};
  const re = /([A-Za-z][\w-]*)\s*=\s*(?:"((?:[^"\\]|\\.)*)"|([^,\s]*))/g;
  for (const p of (m[2] ?? '').matchAll(re)) {
    const key = p[1]?.toLowerCase();
    if (key) params[key] = p[2] !== undefined ? p[2].replace(/\\(.)/g, '$1') : (p[3] ?? '');
  }
  return { scheme: m[1].toLowerCase(), params };
}

interface ErrorLike {
  name?: string;
  message?: string;
  code?: string;
  cause?: unknown;
  errors?: unknown[];
}

function asError(e: unknown): ErrorLike | undefined {
  if (typeof e !== 'object' || e === null) return undefined;
  const { name, message, code, cause, errors } = e as Record<string, unknown>;
  return {
    ...(typeof name === 'string' && { name }),
    ...(typeof message === 'string' && { message }),
    ...(typeof code === 'string' && { code }),
    ...(cause !== undefined && { cause }),
    ...(Array.isArray(errors) && { errors: errors as unknown[] }),
  };
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}
