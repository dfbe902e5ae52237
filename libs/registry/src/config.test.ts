import { describe, expect, it } from '@jest/globals';
import { executionMetadata, imageConfigFromJson, type ImageConfig } from './config.js';

const empty: ImageConfig = { entrypoint: [], cmd: [], exposedPorts: [], user: '', env: [] };

describe('imageConfigFromJson', () => {
  const cases: [string, unknown, ImageConfig][] = [
    ['nothing', {}, empty],
    ['not an object', 'x', empty],
    [
      'null fields',
      { config: { Entrypoint: null, Cmd: null, ExposedPorts: null, User: null, Env: null } },
      empty,
    ],
    [
      'everything',
      {
        architecture: 'amd64',
        config: {
          Entrypoint: ['/docker-entrypoint.sh'],
          Cmd: ['nginx', '-g', 'daemon off;'],
          ExposedPorts: {
            '80/tcp': {},
            '443/tcp': {},
            '53/UDP': {},
            '8080': {},
            'bad/tcp': {},
            '70000/tcp': {},
          },
          User: 'nginx',
          Env: ['PATH=/usr/bin', 'NGINX_VERSION=1.25'],
        },
      },
      {
        entrypoint: ['/docker-entrypoint.sh'],
        cmd: ['nginx', '-g', 'daemon off;'],
        exposedPorts: [
          { port: 53, protocol: 'udp' },
          { port: 80, protocol: 'tcp' },
          { port: 443, protocol: 'tcp' },
          { port: 8080, protocol: 'tcp' },
        ],
        user: 'nginx',
        env: ['PATH=/usr/bin', 'NGINX_VERSION=1.25'],
      },
    ],
    [
      'same port on two protocols',
      { config: { ExposedPorts: { '53/udp': {}, '53/tcp': {} } } },
      {
        ...empty,
        exposedPorts: [
          { port: 53, protocol: 'tcp' },
          { port: 53, protocol: 'udp' },
        ],
      },
    ],
  ];
  it.each(cases)('%s', (_name, blob, want) => {
    expect(imageConfigFromJson(blob)).toEqual(want);
  });
});

describe('executionMetadata', () => {
  const cases: [string, ImageConfig, string][] = [
    ['nothing', empty, '{"cmd":[],"ports":[]}'],
    [
      'one port',
      { ...empty, exposedPorts: [{ port: 8080, protocol: 'tcp' }] },
      '{"cmd":[],"ports":[{"Port":8080,"Protocol":"tcp"}]}',
    ],
    [
      'entrypoint before cmd, user when set',
      {
        entrypoint: ['/entry', '-x'],
        cmd: ['serve', '--port=8080'],
        exposedPorts: [
          { port: 8080, protocol: 'tcp' },
          { port: 9000, protocol: 'udp' },
        ],
        user: '1000:1000',
        env: ['IGNORED=1'],
      },
      '{"cmd":["/entry","-x","serve","--port=8080"],"ports":[{"Port":8080,"Protocol":"tcp"},{"Port":9000,"Protocol":"udp"}],"user":"1000:1000"}',
    ],
    [
      'cmd only',
      { ...empty, cmd: ['sh', '-c', 'echo "hi"'] },
      '{"cmd":["sh","-c","echo \\"hi\\""],"ports":[]}',
    ],
  ];
  it.each(cases)('%s', (_name, config, want) => {
    expect(executionMetadata(config)).toBe(want);
    expect(JSON.parse(executionMetadata(config))).toEqual(JSON.parse(want));
  });
});
