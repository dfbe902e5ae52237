import { describe, expect, it } from '@jest/globals';
import { SettingsError, hashTag, parseSettings } from './settings.js';

describe('Redis settings', () => {
  it('defaults to the single node of REDIS_URL', () => {
    expect(parseSettings({}).redis).toEqual({
      url: 'redis://127.0.0.1:6379',
      clusterNodes: [],
      sentinels: [],
      sentinelName: 'mymaster',
      tls: false,
    });
  });

  it('reads Cluster seeds, credentials and TLS', () => {
    const s = parseSettings({
      REDIS_CLUSTER_NODES: 'redis-0.redis:6379, 10.0.0.7:7000,[fd00::1]:6380',
      OPI_QUEUE_PREFIX: '{opi}',
      REDIS_USERNAME: 'opi',
      REDIS_PASSWORD: 's3cret',
      REDIS_TLS: 'true',
    });
    expect(s.redis).toMatchObject({
      clusterNodes: [
        { host: 'redis-0.redis', port: 6379 },
        { host: '10.0.0.7', port: 7000 },
        { host: 'fd00::1', port: 6380 },
      ],
      username: 'opi',
      password: 's3cret',
      tls: true,
    });
  });

  it('reads sentinels and the master name', () => {
    const s = parseSettings({
      REDIS_SENTINELS: 's1:26379,s2:26379',
      REDIS_SENTINEL_NAME: 'opi',
      REDIS_SENTINEL_PASSWORD: 'x',
    });
    expect(s.redis).toMatchObject({
      sentinels: [
        { host: 's1', port: 26379 },
        { host: 's2', port: 26379 },
      ],
      sentinelName: 'opi',
      sentinelPassword: 'x',
    });
  });

  it.each([
    [{ REDIS_CLUSTER_NODES: 'a:1', OPI_QUEUE_PREFIX: '{opi}', REDIS_SENTINELS: 'b:2' }, 'not both'],
    [{ REDIS_CLUSTER_NODES: 'a:1' }, 'hash tag'],
    [{ REDIS_CLUSTER_NODES: 'a:1', OPI_QUEUE_PREFIX: 'opi{}' }, 'hash tag'],
    [{ REDIS_CLUSTER_NODES: 'a', OPI_QUEUE_PREFIX: '{opi}' }, 'REDIS_CLUSTER_NODES'],
    [{ REDIS_SENTINELS: 'a:0' }, 'REDIS_SENTINELS'],
    [{ REDIS_SENTINELS: 'a:1,' }, 'REDIS_SENTINELS'],
  ])('refuses %j', (env, message) => {
    expect(() => parseSettings(env)).toThrow(SettingsError);
    expect(() => parseSettings(env)).toThrow(message);
  });

  it('finds hash tags as Redis Cluster does', () => {
    expect(hashTag('{opi}:state:lrps')).toBe('opi');
    expect(hashTag('x{a}{b}')).toBe('a');
    expect(hashTag('{}{a}')).toBeUndefined();
    expect(hashTag('opi')).toBeUndefined();
    expect(hashTag('{opi')).toBeUndefined();
  });

  it('scopes the sync to OPI_NAMESPACE when asked', () => {
    expect(parseSettings({}).syncAllNamespaces).toBe(true);
    expect(parseSettings({ OPI_SYNC_ALL_NAMESPACES: 'false' }).syncAllNamespaces).toBe(false);
  });
});
