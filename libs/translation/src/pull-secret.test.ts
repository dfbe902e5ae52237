import { describe, expect, it } from '@jest/globals';
import { labelsFor } from './labels.js';
import { sampleLrp } from './lrp.fixture.js';
import { registrySecretName } from './names.js';
import { dockerConfigSecret, registrySecret } from './pull-secret.js';

const b64 = (s: string) => Buffer.from(s).toString('base64');
const unb64 = (s: string) => Buffer.from(s, 'base64').toString('utf8');

describe('registrySecret', () => {
  it('is a dockerconfigjson Secret for the LRP registry', () => {
    const lrp = sampleLrp();
    const secret = registrySecret(lrp)!;
    expect(secret).toEqual({
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: { name: registrySecretName(lrp), namespace: 'cf-workloads', labels: labelsFor(lrp) },
      type: 'kubernetes.io/dockerconfigjson',
      data: { '.dockerconfigjson': expect.any(String) },
    });
    expect(JSON.parse(unb64(secret.data!['.dockerconfigjson']!))).toEqual({
      auths: {
        'registry.example.com': { username: 'robot', password: 's3cr:et', auth: b64('robot:s3cr:et') },
      },
    });
  });

  it.each([
    ['https://index.docker.io/v1/', 'https://index.docker.io/v1/'],
    ['localhost:5000', 'localhost:5000'],
  ])('files the credentials under registry.server %j', (server, key) => {
    const secret = registrySecret(sampleLrp({ registry: { server, username: 'u', password: 'p' } }))!;
    const config = JSON.parse(unb64(secret.data!['.dockerconfigjson']!)) as {
      auths: Record<string, unknown>;
    };
    expect(Object.keys(config.auths)).toEqual([key]);
  });

  it('is undefined without credentials', () => {
    expect(registrySecret(sampleLrp({ registry: undefined }))).toBeUndefined();
  });
});

describe('dockerConfigSecret', () => {
  it('holds the credentials under the given metadata', () => {
    const metadata = { name: 's', namespace: 'ns', labels: { a: 'b' } };
    const secret = dockerConfigSecret(metadata, { server: 'r.example.com', username: 'u', password: 'p' });
    expect(secret).toEqual({
      apiVersion: 'v1',
      kind: 'Secret',
      metadata,
      type: 'kubernetes.io/dockerconfigjson',
      data: { '.dockerconfigjson': expect.any(String) },
    });
    expect(JSON.parse(unb64(secret.data!['.dockerconfigjson']!))).toEqual({
      auths: { 'r.example.com': { username: 'u', password: 'p', auth: b64('u:p') } },
    });
  });
});
