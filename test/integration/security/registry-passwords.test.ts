/**
 * Registry passwords of a desired app: only the pull Secret, owned by the Deployment, holds them; never
 * error bodies, logs, the Deployment's annotations and spec, BullMQ's jobs, the dashboard or the metrics.
 */
import { beforeAll, describe, expect, it } from '@jest/globals';
import { desireBody, uuid } from '@opi/contract/testing';
import { eventually } from '../../support/eventually.js';
import { type ClusterReads, useRegistryService } from '../../support/registry-service.js';
import { TOKENS, get, useSecureApis } from '../../support/secure-api.js';

const secure = useSecureApis();

describe('registry passwords', () => {
  const service = useRegistryService(secure);
  const { PASSWORD, leaks, lines, send, docker, allJobsText, dashboardText } = service;
  let base: string;
  let apps: ClusterReads;
  beforeAll(() => {
    ({ base, apps } = service);
  });

  it('reach the cluster as a pull Secret, and appear neither in error bodies nor in any log line', async () => {
    const guid = uuid(1, 'reg');
    const version = uuid(2, 'reg');
    const pg = `${guid}-${version}`;
    const ok = await send(
      'PUT',
      `/apps/${pg}`,
      JSON.stringify(desireBody(guid, version, { lifecycle: docker() })),
    );
    expect(ok.status).toBe(202);
    // The password went where it belongs: the Deployment's pull Secret.
    await eventually(
      async () => (await apps.secrets()).some((s) => s.includes(PASSWORD)),
      'the pull Secret',
      30_000,
    );
    // The Secret is created first, then the Deployment that owns it.
    await eventually(async () => (await apps.list()).length === 1, 'the Deployment', 30_000);

    const refused: { status: number; text: string }[] = [
      // A field the contract refuses, next to the password.
      await send(
        'PUT',
        `/apps/${pg}`,
        JSON.stringify(desireBody(guid, version, { disk_mb: 0, lifecycle: docker() })),
      ),
      // The password itself of the wrong type.
      await send(
        'PUT',
        `/apps/${pg}`,
        JSON.stringify(
          desireBody(guid, version, {
            lifecycle: { docker_lifecycle: { image: 'a/b:1', registry_password: { value: PASSWORD } } },
          }),
        ),
      ),
      // A path that does not match the body.
      await send(
        'PUT',
        `/apps/${uuid(3, 'reg')}-${version}`,
        JSON.stringify(desireBody(guid, version, { lifecycle: docker() })),
      ),
      // Malformed JSON around the password.
      await send(
        'PUT',
        `/apps/${pg}`,
        `{"lifecycle": {"docker_lifecycle": {"registry_password": "${PASSWORD}" oops`,
      ),
      // The password unquoted and single-quoted: V8's parse error quotes the text around the mistake.
      await send(
        'PUT',
        `/apps/${pg}`,
        `{"lifecycle": {"docker_lifecycle": {"registry_password": ${PASSWORD}}}}`,
      ),
      await send(
        'PUT',
        `/apps/${pg}`,
        `{"lifecycle": {"docker_lifecycle": {"registry_password": '${PASSWORD}'}}}`,
      ),
      // A body over the limit.
      await send(
        'PUT',
        `/apps/${pg}`,
        JSON.stringify(
          desireBody(guid, version, { lifecycle: docker(), environment: { BIG: 'x'.repeat(1_100_000) } }),
        ),
      ),
      // A task with the password and a callback that is not a URL.
      await send(
        'POST',
        `/tasks/${uuid(4, 'reg')}`,
        JSON.stringify({
          guid: uuid(4, 'reg'),
          name: 'migrate',
          app_guid: guid,
          app_name: 'app',
          org_name: 'org',
          org_guid: 'org-1',
          space_name: 'dev',
          space_guid: 'space-1',
          environment: [],
          completion_callback: 'not a url',
          lifecycle: docker(),
          memory_mb: 64,
          disk_mb: 64,
          cpu_weight: 1,
        }),
      ),
    ];
    for (const r of refused) {
      expect(r.status).toBeGreaterThanOrEqual(400);
      expect(r.status).toBeLessThan(500);
      // Either of the shapes CC's clients read: apps `error.message`, tasks a top-level `message`.
      expect([{ error: { message: expect.any(String) } }, { message: expect.any(String) }]).toContainEqual(
        JSON.parse(r.text),
      );
      expect(leaks(r.text)).toEqual([]);
    }
    // The logs saw all of it (requests, the converge) at trace level, and neither the password nor the token.
    const log = lines.join('');
    expect(log).toContain(pg);
    expect(log).toContain('"statusCode":400');
    // Request lines carry id, method, url and peer: no header, so no authorization header, is ever logged.
    expect(log).not.toMatch(/authorization|"headers"/i);
    expect(leaks(log)).toEqual([]);
    expect(log).not.toContain(TOKENS[0]);
  });

  it('stay out of the Deployment (annotations, spec) and of every job: the pull Secret, owned by the Deployment, has them', async () => {
    const guid = uuid(5, 'reg');
    const version = uuid(6, 'reg');
    const pg = `${guid}-${version}`;
    const ok = await send(
      'PUT',
      `/apps/${pg}`,
      JSON.stringify(desireBody(guid, version, { lifecycle: docker() })),
    );
    expect(ok.status).toBe(202);
    const deployment = await eventually(
      async () =>
        (await apps.deployments()).find(
          (d) => d.metadata?.annotations?.['cloudfoundry.org/process_guid'] === pg,
        ),
      'the Deployment',
      30_000,
    );
    const annotations = deployment.metadata?.annotations ?? {};
    // The desired LRP is there, so the state can be rebuilt, but not its credentials.
    expect(Object.keys(annotations).length).toBeGreaterThan(0);
    expect(leaks(JSON.stringify(annotations))).toEqual([]);
    expect(JSON.stringify(annotations)).not.toMatch(/registry_password|"password"/);
    expect(leaks(JSON.stringify(deployment))).toEqual([]);
    // The pod pulls with a Secret of type dockerconfigjson that the Deployment owns (deleted with it).
    const pullSecrets = deployment.spec?.template.spec?.imagePullSecrets ?? [];
    expect(pullSecrets).toHaveLength(1);
    const secret = (await apps.secretObjects()).find((x) => x.metadata?.name === pullSecrets[0]?.name);
    expect(secret?.type).toBe('kubernetes.io/dockerconfigjson');
    expect(Buffer.from(secret?.data?.['.dockerconfigjson'] ?? '', 'base64').toString()).toContain(PASSWORD);
    expect(secret?.metadata?.ownerReferences).toEqual([
      expect.objectContaining({
        kind: 'Deployment',
        name: deployment.metadata?.name,
        uid: deployment.metadata?.uid,
      }),
    ]);
    expect(leaks(JSON.stringify(secret?.metadata ?? {}))).toEqual([]);
    // Jobs carry identities only: neither BullMQ's records nor the dashboard show the password.
    expect(leaks(await allJobsText())).toEqual([]);
    const shown = await dashboardText();
    expect(shown).toContain(pg);
    expect(leaks(shown)).toEqual([]);
    // Nor do the metrics, which take no credentials.
    const metrics = await get(`${base}/metrics`);
    expect(leaks(metrics.text)).toEqual([]);
    expect(metrics.text).not.toContain(TOKENS[0]);
  });
});
