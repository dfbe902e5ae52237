import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { type Simulator, minorOf, startSimulator } from './index.js';

const deployment = (name: string) => ({
  apiVersion: 'apps/v1',
  kind: 'Deployment',
  metadata: { name, labels: { app: name } },
  spec: {
    selector: { matchLabels: { app: name } },
    template: {
      metadata: { labels: { app: name } },
      spec: { containers: [{ name: 'app', image: 'a:1', env: [{ name: 'MY VAR', value: 'x' }] }] },
    },
  },
});

describe.each([
  ['1.30', 422],
  ['1.31', 422],
  ['1.32', 201],
  ['v1.34.1', 201],
])('a simulator playing %s', (version, status) => {
  let sim: Simulator;
  const call = (path: string, body?: object) =>
    fetch(`${sim.httpUrl}${path}`, {
      method: body ? 'POST' : 'GET',
      headers: { authorization: `Bearer ${sim.token}`, 'content-type': 'application/json' },
      ...(body ? { body: JSON.stringify(body) } : {}),
    });
  beforeAll(async () => {
    sim = await startSimulator({ controllers: false, kubernetesVersion: version });
  });
  afterAll(async () => {
    await sim.close();
  });

  it('says so at /version', async () => {
    const v = (await (await call('/version')).json()) as { major: string; minor: string; gitVersion: string };
    expect(v).toMatchObject({ major: '1', minor: String(minorOf(version)) });
    expect(v.gitVersion).toBe(`v1.${minorOf(version)}.0-kubesim`);
  });

  it(`answers a Deployment with env var "MY VAR" ${status}`, async () => {
    const res = await call('/apis/apps/v1/namespaces/default/deployments', deployment('envname'));
    expect(res.status).toBe(status);
    const body = (await res.json()) as { message?: string };
    if (status === 422) expect(body.message).toContain('env[0].name: Invalid value: "MY VAR"');
  });
});

describe('minorOf', () => {
  it.each([
    ['1.30', 30],
    ['v1.34', 34],
    ['1.28.3', 28],
  ])('reads %p', (v, minor) => {
    expect(minorOf(v)).toBe(minor);
  });
  it.each(['2.0', '1', 'latest', '1.x'])('refuses %p, naming it', (v) => {
    expect(() => minorOf(v)).toThrow(JSON.stringify(v));
  });
});
