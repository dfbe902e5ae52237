/**
 * @opi/registry against a real Distribution registry (Debian's docker-registry) on loopback: images pushed
 * through the upload API are read back by tag, by digest and through an index; a private registry with
 * htpasswd auth; and the errors CC's user would see.
 */
import { createServer } from 'node:net';
import { executionMetadata, fetchImageConfig, RegistryError, type ImageConfig } from '@opi/registry';
import {
  OCI_INDEX,
  pushImage,
  pushIndex,
  startRegistry,
  type PushedImage,
  type TestRegistry,
} from '../../support/registry.js';

const PASSWORD = 'pa55-word-s3cret';
const WRONG_PASSWORD = 'not-the-pa55word';
const credentials = { username: 'staging', password: PASSWORD };

let open: TestRegistry;
let closed: TestRegistry;
let app: PushedImage;
let multi: Awaited<ReturnType<typeof pushIndex>>;
/** Every RegistryError message seen, checked at the end for the passwords. */
const messages: string[] = [];

const appConfig = {
  Entrypoint: ['/bin/app'],
  Cmd: ['serve', '--port', '8080'],
  ExposedPorts: { '8080/tcp': {}, '9090/udp': {} },
  User: 'vcap',
  Env: ['PATH=/usr/bin:/bin', 'MODE=production'],
};
const expected: ImageConfig = {
  entrypoint: ['/bin/app'],
  cmd: ['serve', '--port', '8080'],
  exposedPorts: [
    { port: 8080, protocol: 'tcp' },
    { port: 9090, protocol: 'udp' },
  ],
  user: 'vcap',
  env: ['PATH=/usr/bin:/bin', 'MODE=production'],
};

beforeAll(async () => {
  [open, closed] = await Promise.all([startRegistry(), startRegistry({ htpasswd: credentials })]);
  app = await pushImage(open, 'team/app', '1', appConfig);
  const arm = await pushImage(open, 'team/app', 'arm', { Cmd: ['arm-only'] }, 'arm64');
  // arm64 listed first: the client must look for linux/amd64, not take the first entry.
  multi = await pushIndex(open, 'team/app', 'multi', [
    { image: arm, os: 'linux', architecture: 'arm64' },
    { image: app, os: 'linux', architecture: 'amd64' },
  ]);
  await pushIndex(
    open,
    'team/app',
    'oci-arm',
    [{ image: arm, os: 'linux', architecture: 'arm64' }],
    OCI_INDEX,
  );
  await pushImage(closed, 'private/app', 'v1', appConfig);
}, 60_000);

afterAll(async () => {
  await Promise.all([open?.stop(), closed?.stop()]);
});

async function failure(
  image: string,
  creds?: { username: string; password: string },
): Promise<RegistryError> {
  try {
    await fetchImageConfig(image, creds, { timeoutMs: 5000 });
  } catch (e) {
    if (!(e instanceof RegistryError)) throw e;
    messages.push(e.message);
    return e;
  }
  throw new Error(`reading ${image} should have failed`);
}

describe('image config from a registry', () => {
  it('reads a pushed image by tag', async () => {
    const config = await fetchImageConfig(`${open.host}/team/app:1`);
    expect(config).toEqual(expected);
    expect(JSON.parse(executionMetadata(config))).toEqual({
      cmd: ['/bin/app', 'serve', '--port', '8080'],
      ports: [
        { Port: 8080, Protocol: 'tcp' },
        { Port: 9090, Protocol: 'udp' },
      ],
      user: 'vcap',
    });
  });

  it('reads a pushed image by digest', async () => {
    await expect(fetchImageConfig(`${open.host}/team/app@${app.digest}`)).resolves.toEqual(expected);
  });

  it('picks linux/amd64 from a manifest list, by tag and by digest', async () => {
    await expect(fetchImageConfig(`${open.host}/team/app:multi`)).resolves.toEqual(expected);
    await expect(fetchImageConfig(`${open.host}/team/app@${multi.digest}`)).resolves.toEqual(expected);
  });

  it('takes the only image of an OCI index without amd64', async () => {
    const config = await fetchImageConfig(`${open.host}/team/app:oci-arm`);
    expect(config.cmd).toEqual(['arm-only']);
  });

  it('reads from a private registry with the right credentials', async () => {
    await expect(fetchImageConfig(`${closed.host}/private/app:v1`, credentials)).resolves.toEqual(expected);
  });

  it('is denied with wrong or no credentials', async () => {
    const wrong = await failure(`${closed.host}/private/app:v1`, {
      username: 'staging',
      password: WRONG_PASSWORD,
    });
    expect([wrong.kind, wrong.status, wrong.message]).toEqual([
      'denied',
      401,
      `access to image "${closed.host}/private/app:v1" denied (check registry credentials)`,
    ]);
    const none = await failure(`${closed.host}/private/app:v1`);
    expect(none.kind).toBe('denied');
  });

  it('says an unknown image or tag is not found', async () => {
    for (const image of [`${open.host}/team/nope:1`, `${open.host}/team/app:nope`]) {
      const err = await failure(image, credentials);
      expect([err.kind, err.message]).toEqual([
        'not-found',
        `image "${image}" not found in registry ${open.host}`,
      ]);
    }
    const privateUnknown = await failure(`${closed.host}/private/app:nope`, credentials);
    expect(privateUnknown.kind).toBe('not-found');
  });

  it('says a registry on a closed port is unreachable', async () => {
    const port = await closedPort();
    const err = await failure(`127.0.0.1:${port}/team/app:1`, credentials);
    expect(err.kind).toBe('unreachable');
    expect(err.message).toMatch(
      new RegExp(`^registry 127\\.0\\.0\\.1:${port} is unreachable: .*ECONNREFUSED`),
    );
  });

  it('never puts a password in an error message', () => {
    expect(messages.length).toBeGreaterThanOrEqual(5);
    for (const m of messages) {
      expect(m).not.toContain(PASSWORD);
      expect(m).not.toContain(WRONG_PASSWORD);
      expect(m).not.toContain(Buffer.from(`staging:${PASSWORD}`).toString('base64'));
    }
  });
});

/** A loopback port nothing listens on: bound, then released. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const address = server.address();
  await new Promise((r) => server.close(r));
  if (typeof address !== 'object' || address === null) throw new Error('no port');
  return address.port;
}
