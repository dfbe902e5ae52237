import { describe, expect, it } from '@jest/globals';
import { Cluster, Redis } from 'ioredis';
import { createRedis, producerConnection, workerConnection } from './connection.js';

const base = {
  url: 'redis://10.1.2.3:6380/2',
  clusterNodes: [],
  sentinels: [],
  sentinelName: 'mymaster',
  tls: false,
};

/** Builds without connecting, so the options can be inspected. */
function lazy<T extends Redis | Cluster>(c: T): T {
  c.disconnect();
  return c;
}

describe('createRedis', () => {
  it('connects a URL as given', () => {
    const r = lazy(createRedis('redis://127.0.0.1:6999/3', { lazyConnect: true }));
    expect(r).toBeInstanceOf(Redis);
    expect(r.options).toMatchObject({ host: '127.0.0.1', port: 6999, db: 3 });
  });

  it('applies REDIS_PASSWORD and REDIS_TLS to REDIS_URL', () => {
    const r = lazy(
      workerConnection({ ...base, password: 'pw', username: 'u', tls: true }, { lazyConnect: true }),
    );
    expect(r).toBeInstanceOf(Redis);
    expect((r as Redis).options).toMatchObject({
      host: '10.1.2.3',
      port: 6380,
      db: 2,
      username: 'u',
      password: 'pw',
      tls: {},
      maxRetriesPerRequest: null,
    });
  });

  it('makes a Cluster of the seeds, with the role and credentials on every node', () => {
    const nodes = [
      { host: '127.0.0.1', port: 7000 },
      { host: '127.0.0.1', port: 7001 },
    ];
    const c = lazy(
      producerConnection({ ...base, clusterNodes: nodes, password: 'pw' }, { lazyConnect: true }),
    );
    expect(c).toBeInstanceOf(Cluster);
    const cluster = c as Cluster;
    expect(cluster.options.enableOfflineQueue).toBe(false);
    expect(cluster.options.redisOptions).toMatchObject({ password: 'pw', maxRetriesPerRequest: 1 });
    expect((cluster as unknown as { startupNodes: unknown }).startupNodes).toEqual(nodes);
    const w = lazy(workerConnection({ ...base, clusterNodes: nodes }, { lazyConnect: true }) as Cluster);
    // BullMQ refuses a blocking Cluster connection whose nodes retry a bounded number of times.
    expect(w.options.redisOptions?.maxRetriesPerRequest).toBeNull();
  });

  it('asks the sentinels for the named master', () => {
    const r = lazy(
      createRedis(
        { ...base, sentinels: [{ host: 's1', port: 26379 }], sentinelName: 'opi', sentinelPassword: 'sp' },
        { lazyConnect: true },
      ) as Redis,
    );
    expect(r.options).toMatchObject({
      sentinels: [{ host: 's1', port: 26379 }],
      name: 'opi',
      sentinelPassword: 'sp',
    });
  });
});
