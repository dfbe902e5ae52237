/**
 * The API's Express app in-process against real Redis and BullMQ (no worker), under a prefix of its own
 * per test file, and what the route tests read back: the records, the converges asked, the contract's
 * error body. useApiApp() registers the file's beforeAll/afterAll (the afterAll removes every key).
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, expect } from '@jest/globals';
import type { Express } from 'express';
import type { Redis } from 'ioredis';
import request from 'supertest';
import { type Lrp, clientDesireBody } from '@opi/contract/testing';
import { createLogger } from '@opi/logging';
import { JobProducer, producerConnection } from '@opi/queue';
import {
  CacheWriter,
  type CachedInstances,
  type InboxEntry,
  StateStore,
  TaskStore,
  parseInboxEntry,
} from '@opi/state';
import { createApp } from '../../apps/api/src/index.js';

const REDIS_URL = 'redis://127.0.0.1:6379';
const DEFAULTS = {
  namespace: 'cf-workloads',
  dropletRegistry: 'droplets.example.com',
  allowedNamespaces: ['space-dev'],
};
export const BODY_LIMIT = 64 * 1024;
export const SMALL_BODY_LIMIT = 2048;

const logger = createLogger({ level: 'silent', pretty: false });

export interface ApiApp {
  /** Every key of the file starts with it (the extra apps' prefixes too: `${prefix}-…`). */
  prefix: string;
  redis: Redis;
  store: StateStore;
  producer: JobProducer;
  /** The app with BODY_LIMIT, and the same app with SMALL_BODY_LIMIT. */
  app: Express;
  small: Express;
  /** Producers whose queues the afterAll obliterates and closes (the main one first). */
  producers: JobProducer[];
}

async function ready(redis: Redis): Promise<void> {
  if (redis.status === 'ready') return;
  await new Promise<void>((resolve, reject) => {
    redis.once('ready', resolve);
    redis.once('end', () => {
      reject(new Error('redis connection ended'));
    });
  });
}

/** An app on `connection` under `prefix`, with the same settings as the file's own. */
export function appOn(connection: Redis, prefix: string, producer: JobProducer): Express {
  return createApp({
    store: new StateStore(connection, prefix),
    tasks: new TaskStore(connection, prefix),
    producer,
    logger,
    bodyLimitBytes: BODY_LIMIT,
    defaults: DEFAULTS,
  });
}

/** The app of this test file; its fields are set once the beforeAll it registers has run. */
export function useApiApp(): ApiApp {
  const prefix = `test-api-${randomUUID().slice(0, 8)}`;
  const producers: JobProducer[] = [];
  const connections: Redis[] = [];
  const env = { prefix, producers } as ApiApp;

  beforeAll(async () => {
    const redis = producerConnection(REDIS_URL);
    connections.push(redis);
    await ready(redis);
    const store = new StateStore(redis, prefix);
    const producer = new JobProducer({ connection: redis, prefix, attempts: 3 });
    producers.push(producer);
    const deps = { store, tasks: new TaskStore(redis, prefix), producer, logger, defaults: DEFAULTS };
    Object.assign(env, {
      redis,
      store,
      producer,
      app: createApp({ ...deps, bodyLimitBytes: BODY_LIMIT }),
      small: createApp({ ...deps, bodyLimitBytes: SMALL_BODY_LIMIT }),
    });
  });

  afterAll(async () => {
    for (const p of producers) {
      for (const q of Object.values(p.queues)) await q.obliterate({ force: true });
      await p.close();
    }
    const redis = env.redis;
    let cursor = '0';
    do {
      const [next, found] = await redis.scan(cursor, 'MATCH', `${prefix}*`, 'COUNT', 1000);
      cursor = next;
      if (found.length) await redis.del(...found);
    } while (cursor !== '0');
    for (const c of connections) await c.quit();
  });

  return env;
}

export interface SchedulingInfo {
  desired_lrp_key: { process_guid: string };
  guid: string;
  version: string;
  annotation: string;
}

export function expectErrorBody(body: unknown, ...mentions: string[]): string {
  expect(body).toEqual({ error: { message: expect.any(String) } });
  const message = (body as { error: { message: string } }).error.message;
  for (const m of mentions) expect(message).toContain(m);
  return message;
}

/** Requests and reads against `env`, for use inside tests (after its beforeAll). */
export function apiProbes(env: ApiApp) {
  async function desire(lrp: Lrp, overrides: Record<string, unknown> = {}): Promise<void> {
    const res = await request(env.app).put(`/apps/${lrp.processGuid}`).send(clientDesireBody(lrp, overrides));
    expect(res.status).toBe(202);
  }

  async function schedulingInfos(app: Express = env.app): Promise<SchedulingInfo[]> {
    const res = await request(app).get('/apps');
    expect(res.status).toBe(200);
    const body = res.body as { desired_lrp_scheduling_infos: SchedulingInfo[] };
    expect(Array.isArray(body.desired_lrp_scheduling_infos)).toBe(true);
    return body.desired_lrp_scheduling_infos;
  }

  async function schedulingInfoOf(lrp: Lrp): Promise<SchedulingInfo | undefined> {
    return (await schedulingInfos()).find((s) => s.desired_lrp_key.process_guid === lrp.processGuid);
  }

  /** The converges the writes asked for one LRP (no worker moves the inbox here, so they stay in it). */
  async function convergeJobs(lrp: Lrp): Promise<InboxEntry[]> {
    const raw = await env.redis.lrange(env.store.keys.inbox, 0, -1);
    return raw
      .map((r) => parseInboxEntry(r))
      .filter((e) => e?.processGuid === lrp.processGuid) as InboxEntry[];
  }

  /** Everything a request could change: any record write bumps the generation. */
  async function fingerprint(lrp?: Lrp) {
    const { redis, store, producer } = env;
    const [generation, sched, lrps, record, lrpJobs, syncJobs, inbox] = await Promise.all([
      redis.get(store.keys.generation),
      redis.hgetall(store.keys.schedulingInfos),
      redis.smembers(store.keys.lrps),
      lrp ? redis.get(store.keys.lrp(lrp.processGuid)) : Promise.resolve(null),
      producer.queues.lrp.getJobCounts(),
      producer.queues.sync.getJobCounts(),
      redis.llen(store.keys.inbox),
    ]);
    return { generation, sched, lrps: lrps.sort(), record, lrpJobs, syncJobs, inbox };
  }

  /** Replaces the whole instances cache, as the cache writer does (one writer, token 1, throughout). */
  async function writeCache(entries: Record<string, CachedInstances>, syncedAt = Date.now()): Promise<void> {
    const writer = new CacheWriter(env.redis, env.prefix);
    await writer.claim(1);
    const snapshot = writer.snapshot(1);
    for (const [pg, cached] of Object.entries(entries)) await snapshot.add(pg, JSON.stringify(cached));
    await snapshot.commit({
      syncedAt: String(syncedAt),
      durationMs: '5',
      deployments: String(Object.keys(entries).length),
      pods: '0',
    });
  }

  return { desire, schedulingInfos, schedulingInfoOf, convergeJobs, fingerprint, writeCache };
}
