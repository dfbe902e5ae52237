import { describe, expect, it } from '@jest/globals';
import { RegistryError } from './errors.js';
import { parseImageRef, registryUrl, type ImageRef } from './reference.js';

const D = `sha256:${'a'.repeat(64)}`;

describe('parseImageRef', () => {
  const cases: [string, ImageRef][] = [
    [
      'nginx',
      { registry: 'registry-1.docker.io', repository: 'library/nginx', tag: 'latest', reference: 'latest' },
    ],
    [
      'nginx:1.25',
      { registry: 'registry-1.docker.io', repository: 'library/nginx', tag: '1.25', reference: '1.25' },
    ],
    ['user/app:1', { registry: 'registry-1.docker.io', repository: 'user/app', tag: '1', reference: '1' }],
    [
      'docker.io/nginx',
      { registry: 'registry-1.docker.io', repository: 'library/nginx', tag: 'latest', reference: 'latest' },
    ],
    [
      'index.docker.io/user/app',
      { registry: 'registry-1.docker.io', repository: 'user/app', tag: 'latest', reference: 'latest' },
    ],
    [
      'docker.io/library/nginx:stable',
      { registry: 'registry-1.docker.io', repository: 'library/nginx', tag: 'stable', reference: 'stable' },
    ],
    [
      `nginx@${D}`,
      { registry: 'registry-1.docker.io', repository: 'library/nginx', digest: D, reference: D },
    ],
    [
      `registry.example.com:5000/team/app@${D}`,
      { registry: 'registry.example.com:5000', repository: 'team/app', digest: D, reference: D },
    ],
    [
      `registry.example.com/team/app:v2@${D}`,
      { registry: 'registry.example.com', repository: 'team/app', tag: 'v2', digest: D, reference: D },
    ],
    ['localhost:5000/x', { registry: 'localhost:5000', repository: 'x', tag: 'latest', reference: 'latest' }],
    ['localhost/x:dev', { registry: 'localhost', repository: 'x', tag: 'dev', reference: 'dev' }],
    ['127.0.0.1:5000/a/b/c:t', { registry: '127.0.0.1:5000', repository: 'a/b/c', tag: 't', reference: 't' }],
    ['Registry/app', { registry: 'Registry', repository: 'app', tag: 'latest', reference: 'latest' }],
    ['[::1]:5000/app', { registry: '[::1]:5000', repository: 'app', tag: 'latest', reference: 'latest' }],
    [
      'gcr.io/my-proj/my_app.x__y',
      { registry: 'gcr.io', repository: 'my-proj/my_app.x__y', tag: 'latest', reference: 'latest' },
    ],
  ];
  it.each(cases)('%s', (image, want) => {
    expect(parseImageRef(image)).toEqual(want);
  });

  const invalid: [string, string][] = [
    ['', 'empty'],
    ['UPPER', 'lowercase'],
    ['user/App', 'lowercase'],
    ['nginx:', 'not a valid tag'],
    ['nginx:bad/tag', 'not a registry host'],
    ['nginx@sha256:abc', 'not a digest'],
    ['nginx@', 'not a digest'],
    ['registry.example.com/', 'repository name is missing'],
    ['-app', 'not a valid repository name'],
    ['a//b', 'not a valid repository name'],
    ['has space', 'not a valid repository name'],
    ['exa_mple.com/app', 'not a registry host'],
    [`a/${'b'.repeat(260)}`, 'longer than 255'],
  ];
  it.each(invalid)('rejects %j', (image, why) => {
    let err: unknown;
    try {
      parseImageRef(image);
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(RegistryError);
    expect((err as RegistryError).kind).toBe('invalid-reference');
    expect((err as RegistryError).message).toContain(`invalid image reference "${image}"`);
    expect((err as RegistryError).message).toContain(why);
  });
});

describe('registryUrl', () => {
  const cases: [string, string[], string][] = [
    ['registry-1.docker.io', [], 'https://registry-1.docker.io'],
    ['localhost:5000', [], 'http://localhost:5000'],
    ['localhost', [], 'http://localhost'],
    ['127.0.0.1:5000', [], 'http://127.0.0.1:5000'],
    ['127.10.0.1', [], 'http://127.10.0.1'],
    ['[::1]:5000', [], 'http://[::1]:5000'],
    ['localhost.example.com', [], 'https://localhost.example.com'],
    ['registry.internal:5000', ['registry.internal:5000'], 'http://registry.internal:5000'],
    ['registry.internal:5000', ['registry.internal'], 'http://registry.internal:5000'],
    ['registry.internal:5000', ['http://registry.internal:5000/'], 'http://registry.internal:5000'],
    ['registry.internal:5000', ['registry.internal:5001'], 'https://registry.internal:5000'],
    ['other.internal', ['registry.internal'], 'https://other.internal'],
  ];
  it.each(cases)('%s with insecure %j → %s', (registry, insecure, want) => {
    expect(registryUrl(registry, insecure)).toBe(want);
  });
});
