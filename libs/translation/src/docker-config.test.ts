import { describe, expect, it } from '@jest/globals';
import type { RegistryCredentials } from '@opi/domain';
import { credentialsFromDockerConfig, dockerConfigJson, registryServerOf } from './docker-config.js';

const HUB = 'https://index.docker.io/v1/';
const b64 = (s: string) => Buffer.from(s).toString('base64');

describe('registryServerOf', () => {
  it.each<[string, string]>([
    ['nginx', HUB],
    ['nginx:1.25', HUB],
    ['nginx@sha256:abcd', HUB],
    ['library/nginx', HUB],
    ['team/app:1.0', HUB],
    ['docker.io/library/nginx', 'docker.io'],
    ['registry.example.com/team/app:1.2', 'registry.example.com'],
    ['localhost/app', 'localhost'],
    ['localhost:5000/app', 'localhost:5000'],
    ['10.0.0.1:5000/a/b/c', '10.0.0.1:5000'],
    ['myregistry:443/app', 'myregistry:443'],
  ])('%j → %j', (image, server) => {
    expect(registryServerOf(image)).toBe(server);
  });
});

describe('dockerConfigJson', () => {
  it('files the credentials under the server with username, password and auth', () => {
    const json = dockerConfigJson({ server: 'r.example.com', username: 'u', password: 'p:w' });
    expect(JSON.parse(json)).toEqual({
      auths: { 'r.example.com': { username: 'u', password: 'p:w', auth: b64('u:p:w') } },
    });
  });
});

describe('credentialsFromDockerConfig', () => {
  it.each<[string, string, RegistryCredentials | undefined]>([
    [
      'our own document',
      dockerConfigJson({ server: HUB, username: 'u', password: 'p' }),
      { server: HUB, username: 'u', password: 'p' },
    ],
    [
      'auth only, password with a colon',
      JSON.stringify({ auths: { 'r.io': { auth: b64('robot:a:b') } } }),
      { server: 'r.io', username: 'robot', password: 'a:b' },
    ],
    [
      'explicit fields win over auth',
      JSON.stringify({ auths: { 'r.io': { username: 'u', password: 'p', auth: b64('x:y') } } }),
      { server: 'r.io', username: 'u', password: 'p' },
    ],
    [
      'the first usable entry',
      JSON.stringify({ auths: { bad: 'x', 'r.io': { auth: b64('u:p') } } }),
      { server: 'r.io', username: 'u', password: 'p' },
    ],
    ['auth without a colon', JSON.stringify({ auths: { 'r.io': { auth: b64('nocolon') } } }), undefined],
    ['no auths', '{}', undefined],
    ['auths not an object', '{"auths":[]}', undefined],
    ['not JSON', 'nope', undefined],
  ])('%s', (_what, json, expected) => {
    expect(credentialsFromDockerConfig(json)).toEqual(expected);
  });
});
