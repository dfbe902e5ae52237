/**
 * Staging end to end: the API, Redis, a worker and the simulated cluster, with a stand-in CC that checks
 * each staging result and real registries on loopback: docker images read from a registry (with
 * credentials, wrong ones, unknown images, an unreachable registry) and buildpack recipes' results and
 * failures in the words CC stores.
 */
import { buildpackLifecycle, stagingBody, uuid } from '@opi/contract/testing';
import { type FakeCc, type RecordedCall, startFakeCc } from '../../support/fake-cc.js';
import { type TestRegistry, pushImage, startRegistry } from '../../support/registry.js';
import { type Service, call, eventually, startService } from '../../support/service.js';

describe('staging', () => {
  let cc: FakeCc;
  let s: Service;
  let registry: TestRegistry;
  let privateRegistry: TestRegistry;
  beforeAll(async () => {
    cc = await startFakeCc();
    registry = await startRegistry();
    privateRegistry = await startRegistry({ htpasswd: { username: 'robot', password: 'pa55:word' } });
    await pushImage(registry, 'team/app', '1', {
      Entrypoint: ['/app'],
      Cmd: ['serve'],
      ExposedPorts: { '8080/tcp': {} },
      User: 'vcap',
    });
    await pushImage(privateRegistry, 'team/secret', '2', { Cmd: ['run'], ExposedPorts: { '9090/tcp': {} } });
    s = await startService({ workers: 1, env: { CC_INTERNAL_URL: cc.url } });
  });
  afterAll(async () => {
    await s.close();
    await cc.close();
    await registry.stop();
    await privateRegistry.stop();
  });

  /** POST /stage/:guid with CC's body for `lifecycle`, the result called back to the stand-in CC. */
  const stage = (g: string, lifecycle: unknown, env: Record<string, string> = {}) =>
    call(s.base, 'POST', `/stage/${g}`, stagingBody(cc.url, g, lifecycle, env));

  async function built(g: string): Promise<RecordedCall> {
    return eventually(
      async () => cc.callsTo(`/internal/v3/staging/${g}/build_completed`)[0],
      `the staging result of ${g}`,
      60_000,
    );
  }

  it('stages a docker image by reading its config from the registry', async () => {
    const g = uuid(1, 'stage');
    const image = `${registry.host}/team/app:1`;
    expect((await stage(g, { docker_lifecycle: { image } })).status).toBe(202);
    const c = await built(g);
    expect(c.query).toEqual({ start: 'false' });
    const body = c.body as {
      result: {
        lifecycle_type: string;
        lifecycle_metadata: unknown;
        process_types: unknown;
        execution_metadata: string;
      };
    };
    expect(body.result).toMatchObject({
      lifecycle_type: 'docker',
      lifecycle_metadata: { docker_image: image },
      process_types: { web: '' },
    });
    expect(JSON.parse(body.result.execution_metadata)).toEqual({
      cmd: ['/app', 'serve'],
      ports: [{ Port: 8080, Protocol: 'tcp' }],
      user: 'vcap',
    });
  });

  it('uses the given registry credentials, and reports wrong ones as a StagingError without the password', async () => {
    const ok = uuid(2, 'stage');
    const bad = uuid(3, 'stage');
    const image = `${privateRegistry.host}/team/secret:2`;
    await stage(ok, {
      docker_lifecycle: { image, registry_username: 'robot', registry_password: 'pa55:word' },
    });
    await stage(bad, {
      docker_lifecycle: { image, registry_username: 'robot', registry_password: 'wrong-secret' },
    });
    const good = (await built(ok)).body as { result: { execution_metadata: string } };
    expect(JSON.parse(good.result.execution_metadata)).toMatchObject({
      ports: [{ Port: 9090, Protocol: 'tcp' }],
    });
    const refused = await built(bad);
    expect(refused.body).toMatchObject({ error: { id: 'StagingError' } });
    expect(refused.rawBody).not.toContain('wrong-secret');
  });

  it('reports an unknown image and an unreachable registry as StagingErrors with clear messages', async () => {
    const unknown = uuid(4, 'stage');
    const unreachable = uuid(5, 'stage');
    await stage(unknown, { docker_lifecycle: { image: `${registry.host}/team/nothing:9` } });
    await stage(unreachable, { docker_lifecycle: { image: '127.0.0.1:1/team/app:1' } });
    expect((await built(unknown)).body).toMatchObject({
      error: { id: 'StagingError', message: expect.stringContaining('not found') },
    });
    expect((await built(unreachable)).body).toMatchObject({
      error: { id: 'StagingError', message: expect.stringContaining('unreachable') },
    });
  });

  const buildpack = buildpackLifecycle({ skip_detect: false });

  it('stages with the buildpack recipe and reports its termination message', async () => {
    const g = uuid(6, 'stage');
    const result = {
      lifecycle_type: 'buildpack',
      lifecycle_metadata: { buildpack_key: 'go-buildpack', detected_buildpack: 'go' },
      process_types: { web: './app' },
      execution_metadata: '',
    };
    await stage(g, buildpack, {
      KUBESIM_RUN_MS: '200',
      KUBESIM_TERMINATION_MESSAGE: JSON.stringify(result),
    });
    expect((await built(g)).body).toEqual({ result });
  });

  it('reports a failed buildpack staging as a StagingError', async () => {
    const g = uuid(7, 'stage');
    await stage(g, buildpack, {
      KUBESIM_RUN_MS: '200',
      KUBESIM_BEHAVIOUR: 'fail',
      KUBESIM_EXIT_CODE: '2',
      KUBESIM_TERMINATION_MESSAGE: 'no buildpack detected',
    });
    const body = (await built(g)).body as { error: { id: string; message: string } };
    expect(body.error.id).toBe('StagingError');
    expect(body.error.message).toContain('no buildpack detected');
  });

  /** A buildpack's 2,000-line log that ends in a failed compile, the error a few lines from the end. */
  const compileLog = [
    '-----> Ruby Buildpack version 1.8.58',
    ...Array.from({ length: 1990 }, (_, i) => `       Installing gem-${i} 1.0.${i}`),
    '       Gem::Ext::BuildError: ERROR: Failed to build gem native extension.',
    '       An error occurred while installing nokogiri (1.10.9), and Bundler cannot continue.',
    "       Make sure that `gem install nokogiri -v '1.10.9'` succeeds before bundling.",
    ' !     Failed to install gems via Bundler.',
    ' !',
    'Failed to compile droplet: Failed to run all supply scripts: exit status 14',
  ].join('\n');

  it.each<[string, string, string]>([
    ['223, a compile failure', '223', 'BuildpackCompileFailed'],
    ['1, any other failure', '1', 'StagingError'],
  ])(
    'reports a recipe exiting %s with a 2,000-line log: its id, and the error line CC can store',
    async (_what, code, id) => {
      const g = uuid(code === '223' ? 9 : 10, 'stage');
      await stage(g, buildpack, {
        KUBESIM_RUN_MS: '200',
        KUBESIM_BEHAVIOUR: 'fail',
        KUBESIM_EXIT_CODE: code,
        KUBESIM_LOG: compileLog,
      });
      const call_ = await built(g);
      // The stand-in CC checked it against CC's rules (builds.error_description varchar(255) after
      // "Staging error: "); this is what the user sees.
      expect(call_.cc?.problems).toEqual([]);
      expect(call_.body).toEqual({
        error: {
          id,
          message: `Exited with status ${code}: An error occurred while installing nokogiri (1.10.9), and Bundler cannot continue.`,
        },
      });
    },
  );
});
