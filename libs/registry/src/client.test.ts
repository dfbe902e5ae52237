/**
 * The client against a scripted registry on loopback: token auth (which the real Distribution binary of the
 * integration suite cannot do without TLS certificates), index handling, failures and timeouts.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from '@jest/globals';
import { createHash } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { fetchImageConfig, MEDIA_TYPES, parseChallenge } from './client.js';
import { RegistryError } from './errors.js';

type Handler = (req: IncomingMessage, res: ServerResponse, url: URL) => void;

let server: Server;
let host: string;
let handler: Handler;
const seen: { path: string; authorization: string | undefined }[] = [];

beforeAll(async () => {
  server = createServer((req, res) => {
    const url = new URL(req.url ?? '/', `http://${host}`);
    seen.push({ path: url.pathname + url.search, authorization: req.headers.authorization });
    handler(req, res, url);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  host = `127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(async () => {
  server.closeAllConnections();
  await new Promise((r) => server.close(r));
});
beforeEach(() => {
  seen.length = 0;
});

const sha = (b: string): string => `sha256:${createHash('sha256').update(b).digest('hex')}`;
const configBlob = (cmd: string[]): string =>
  JSON.stringify({ config: { Cmd: cmd, ExposedPorts: { '8080/tcp': {} }, User: 'vcap' } });
const manifestFor = (config: string): string =>
  JSON.stringify({
    schemaVersion: 2,
    mediaType: MEDIA_TYPES.ociManifest,
    config: {
      mediaType: 'application/vnd.oci.image.config.v1+json',
      digest: sha(config),
      size: config.length,
    },
    layers: [],
  });

const amdConfig = configBlob(['amd64']);
const armConfig = configBlob(['arm64']);
const amdManifest = manifestFor(amdConfig);
const armManifest = manifestFor(armConfig);
const index = (entries: [string, string, string][]): string =>
  JSON.stringify({
    schemaVersion: 2,
    mediaType: MEDIA_TYPES.ociIndex,
    manifests: entries.map(([m, os, architecture]) => ({
      mediaType: MEDIA_TYPES.ociManifest,
      digest: sha(m),
      size: m.length,
      platform: { os, architecture },
    })),
  });

/** Serves a repository's manifests and blobs; `auth` decides whether a request may pass. */
function serveRepo(
  repo: string,
  tags: Record<string, string>,
  auth: (req: IncomingMessage) => boolean = () => true,
  challenge = '',
): Handler {
  const byDigest = new Map<string, string>();
  for (const b of [amdConfig, armConfig, amdManifest, armManifest, ...Object.values(tags)])
    byDigest.set(sha(b), b);
  return (req, res, url) => {
    const m = /^\/v2\/(.+)\/(manifests|blobs)\/([^/]+)$/.exec(url.pathname);
    if (!m || m[1] !== repo) return void res.writeHead(404).end('{"errors":[{"code":"NAME_UNKNOWN"}]}');
    if (!auth(req)) return void res.writeHead(401, { 'www-authenticate': challenge }).end();
    const body = tags[m[3]!] ?? byDigest.get(m[3]!);
    if (body === undefined) return void res.writeHead(404).end('{"errors":[{"code":"MANIFEST_UNKNOWN"}]}');
    const type =
      m[2] === 'blobs' ? 'application/octet-stream' : (JSON.parse(body) as { mediaType: string }).mediaType;
    res.writeHead(200, { 'content-type': type }).end(body);
  };
}

async function failure(p: Promise<unknown>): Promise<RegistryError> {
  try {
    await p;
  } catch (e) {
    if (e instanceof RegistryError) return e;
    throw e;
  }
  throw new Error('expected a RegistryError');
}

describe('fetchImageConfig', () => {
  it('reads a manifest and its config over http on loopback', async () => {
    handler = serveRepo('team/app', { v1: amdManifest });
    await expect(fetchImageConfig(`${host}/team/app:v1`)).resolves.toEqual({
      entrypoint: [],
      cmd: ['amd64'],
      exposedPorts: [{ port: 8080, protocol: 'tcp' }],
      user: 'vcap',
      env: [],
    });
    expect(seen.map((s) => s.path)).toEqual([
      `/v2/team/app/manifests/v1`,
      `/v2/team/app/blobs/${sha(amdConfig)}`,
    ]);
  });

  const picks: [string, [string, string, string][], string[]][] = [
    [
      'linux/amd64 wherever it is listed',
      [
        [armManifest, 'linux', 'arm64'],
        [amdManifest, 'linux', 'amd64'],
      ],
      ['amd64'],
    ],
    ['the first image without amd64', [[armManifest, 'linux', 'arm64']], ['arm64']],
    [
      'past attestations',
      [
        [amdManifest, 'unknown', 'unknown'],
        [armManifest, 'linux', 'arm64'],
      ],
      ['arm64'],
    ],
  ];
  it.each(picks)('picks %s from an index', async (_name, entries, cmd) => {
    handler = serveRepo('team/app', { multi: index(entries) });
    expect((await fetchImageConfig(`${host}/team/app:multi`)).cmd).toEqual(cmd);
  });

  it('picks the platform it is asked for', async () => {
    handler = serveRepo('team/app', {
      multi: index([
        [amdManifest, 'linux', 'amd64'],
        [armManifest, 'linux', 'arm64'],
      ]),
    });
    const config = await fetchImageConfig(`${host}/team/app:multi`, undefined, {
      platform: { os: 'linux', architecture: 'arm64' },
    });
    expect(config.cmd).toEqual(['arm64']);
  });

  it('gets an anonymous bearer token for the challenged scope and keeps it', async () => {
    const tokens: string[] = [];
    const repo = serveRepo(
      'library/app',
      { latest: amdManifest },
      (req) => req.headers.authorization === 'Bearer anon',
      `Bearer realm="http://${host}/token",service="fake",scope="repository:library/app:pull"`,
    );
    handler = (req, res, url) => {
      if (url.pathname !== '/token') {
        repo(req, res, url);
        return;
      }
      tokens.push(url.search);
      expect(req.headers.authorization).toBeUndefined();
      res.writeHead(200, { 'content-type': 'application/json' }).end('{"token":"anon"}');
    };
    expect((await fetchImageConfig(`${host}/library/app`)).cmd).toEqual(['amd64']);
    expect(tokens).toEqual(['?service=fake&scope=repository%3Alibrary%2Fapp%3Apull']);
    expect(seen.filter((s) => s.path.startsWith('/v2/')).map((s) => s.authorization)).toEqual([
      undefined,
      'Bearer anon',
      'Bearer anon',
    ]);
  });

  it('sends the credentials to the token service and takes access_token', async () => {
    const expected = `Basic ${Buffer.from('me:s3cret-pw').toString('base64')}`;
    const repo = serveRepo(
      'team/app',
      { v1: amdManifest },
      (req) => req.headers.authorization === 'Bearer private',
      `Bearer realm="http://${host}/token",service="fake"`,
    );
    handler = (req, res, url) => {
      if (url.pathname !== '/token') {
        repo(req, res, url);
        return;
      }
      // Without a scope in the challenge the client asks for pull on the repository.
      expect(url.searchParams.get('scope')).toBe('repository:team/app:pull');
      if (req.headers.authorization !== expected) return void res.writeHead(401).end();
      res.writeHead(200).end('{"access_token":"private"}');
    };
    expect(
      (await fetchImageConfig(`${host}/team/app:v1`, { username: 'me', password: 's3cret-pw' })).cmd,
    ).toEqual(['amd64']);
    const err = await failure(
      fetchImageConfig(`${host}/team/app:v1`, { username: 'me', password: 'wrong-pw' }),
    );
    expect(err.kind).toBe('denied');
    expect(err.message).toBe(`access to image "${host}/team/app:v1" denied (check registry credentials)`);
    expect(err.message).not.toContain('wrong-pw');
  });

  it('answers a Basic challenge with the credentials, and is denied without them', async () => {
    const expected = `Basic ${Buffer.from('me:pw').toString('base64')}`;
    handler = serveRepo(
      'team/app',
      { v1: amdManifest },
      (req) => req.headers.authorization === expected,
      'Basic realm="x"',
    );
    expect((await fetchImageConfig(`${host}/team/app:v1`, { username: 'me', password: 'pw' })).cmd).toEqual([
      'amd64',
    ]);
    expect((await failure(fetchImageConfig(`${host}/team/app:v1`))).kind).toBe('denied');
  });

  it('says an image is not found', async () => {
    handler = serveRepo('team/app', { v1: amdManifest });
    const err = await failure(fetchImageConfig(`${host}/team/app:v2`));
    expect([err.kind, err.status, err.message]).toEqual([
      'not-found',
      404,
      `image "${host}/team/app:v2" not found in registry ${host}`,
    ]);
  });

  it('reports a server error with the registry explanation, scrubbed of the password', async () => {
    handler = (_req, res) =>
      res
        .writeHead(503)
        .end('{"errors":[{"code":"UNAVAILABLE","message":"down for maintenance, hunter22"}]}');
    const err = await failure(fetchImageConfig(`${host}/team/app`, { username: 'u', password: 'hunter22' }));
    expect([err.kind, err.status]).toEqual(['unexpected', 503]);
    expect(err.message).toBe(`unexpected answer 503 from registry ${host}: down for maintenance, ***`);
  });

  it('rejects content that does not match its digest', async () => {
    const digest = sha('something else');
    handler = (_req, res) => res.writeHead(200, { 'content-type': MEDIA_TYPES.ociManifest }).end(amdManifest);
    const err = await failure(fetchImageConfig(`${host}/team/app@${digest}`));
    expect(err.kind).toBe('unexpected');
    expect(err.message).toContain('does not match its digest');
  });

  it('gives up on a registry that does not answer in time', async () => {
    handler = () => undefined;
    const started = Date.now();
    const err = await failure(fetchImageConfig(`${host}/team/app`, undefined, { timeoutMs: 300 }));
    expect(Date.now() - started).toBeLessThan(5000);
    expect([err.kind, err.message]).toEqual([
      'unreachable',
      `registry ${host} is unreachable: no answer within 300 ms`,
    ]);
  });

  it('gives up on a body that stalls', async () => {
    handler = (_req, res) => {
      res.writeHead(200, { 'content-type': MEDIA_TYPES.ociManifest });
      res.write('{"schemaVersion":');
    };
    const err = await failure(fetchImageConfig(`${host}/team/app`, undefined, { timeoutMs: 300 }));
    expect([err.kind, err.message]).toEqual([
      'unreachable',
      `registry ${host} is unreachable: no answer within 300 ms`,
    ]);
  });
});

describe('parseChallenge', () => {
  const cases: [string, ReturnType<typeof parseChallenge>][] = [
    [
      'Bearer realm="https://auth.docker.io/token",service="registry.docker.io",scope="repository:library/nginx:pull"',
      {
        scheme: 'bearer',
        params: {
          realm: 'https://auth.docker.io/token',
          service: 'registry.docker.io',
          scope: 'repository:library/nginx:pull',
        },
      },
    ],
    ['Basic realm="Registry Realm"', { scheme: 'basic', params: { realm: 'Registry Realm' } }],
    [
      'bearer realm=https://a/t, scope="repository:a:pull,push"',
      { scheme: 'bearer', params: { realm: 'https://a/t', scope: 'repository:a:pull,push' } },
    ],
    ['', undefined],
  ];
  it.each(cases)('%j', (header, want) => {
    expect(parseChallenge(header)).toEqual(want);
  });
});
