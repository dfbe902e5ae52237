/**
 * The API started for real (startApi, a free port) with the authentication settings under test, each
 * under a prefix of its own; plain-HTTP requests with any headers, Basic credentials, a failed job.
 * useSecureApis() registers the afterAll that closes every API and removes every prefix.
 */
import { randomUUID } from 'node:crypto';
import { afterAll } from '@jest/globals';
import { Queue, Worker } from 'bullmq';
import { Redis } from 'ioredis';
import { type Settings, parseSettings } from '@opi/config';
import { createLogger, type Logger } from '@opi/logging';
import { workerConnection } from '@opi/queue';
import { type RunningApi, startApi } from '../../apps/api/src/index.js';
import { eventually } from './eventually.js';
import { deletePrefix } from './redis-keys.js';

export const REDIS_URL = 'redis://127.0.0.1:6379';
export const TOKENS = ['tok-alpha-0123456789', 'tok-beta-0123456789'];
export const DASH = { user: 'ops', password: 'dash-Pa55-word' };
export const silent = createLogger({ level: 'silent', pretty: false });

/** Both tokens and the dashboard's credentials. */
export const TOKENS_AND_DASHBOARD = {
  OPI_API_TOKENS: TOKENS.join(','),
  OPI_DASHBOARD_USERNAME: DASH.user,
  OPI_DASHBOARD_PASSWORD: DASH.password,
};

export function basic(user: string, password: string): string {
  return `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}`;
}

export async function get(
  url: string,
  headers: Record<string, string> = {},
  init: RequestInit = {},
): Promise<{ status: number; text: string; headers: Headers }> {
  const res = await fetch(url, { ...init, headers });
  return { status: res.status, text: await res.text(), headers: res.headers };
}

export interface SecureApis {
  redis: Redis;
  /** Every prefix settingsFor made, the latest last. */
  prefixes: string[];
  /** APIs the afterAll closes. */
  running: RunningApi[];
  settingsFor: (env: Record<string, string>) => Settings;
  api: (env: Record<string, string>, logger?: Logger) => Promise<RunningApi>;
  /** A job in `queue` that has failed once: a throw-away worker fails it, as a real failure would. */
  failedJob: (prefix: string, queue: string, data: Record<string, unknown>) => Promise<string>;
}

export function useSecureApis(): SecureApis {
  const prefixes: string[] = [];
  const running: RunningApi[] = [];
  // Made when the test file is collected; it connects on first use, so a run that filters out every
  // test (whose afterAll then does not run) leaves no socket open.
  const redis = new Redis(REDIS_URL, { lazyConnect: true });

  function settingsFor(env: Record<string, string>): Settings {
    const prefix = `it-sec-${randomUUID().slice(0, 8)}`;
    prefixes.push(prefix);
    return parseSettings({ PORT: '0', REDIS_URL, OPI_QUEUE_PREFIX: prefix, ...env });
  }

  async function api(env: Record<string, string>, logger: Logger = silent): Promise<RunningApi> {
    const a = await startApi(settingsFor(env), logger);
    running.push(a);
    return a;
  }

  afterAll(async () => {
    for (const a of running) await a.close();
    for (const prefix of prefixes) {
      await deletePrefix(redis, prefix);
    }
    redis.disconnect();
  });

  async function failedJob(prefix: string, queue: string, data: Record<string, unknown>): Promise<string> {
    const q = new Queue(queue, { connection: redis, prefix });
    const job = await q.add('test-failing', data, { attempts: 1 });
    const connection = workerConnection(REDIS_URL);
    const w = new Worker(
      queue,
      () => {
        throw new Error('refused by the test');
      },
      { connection, prefix },
    );
    await eventually(async () => (await job.getState()) === 'failed', 'the job to fail');
    await w.close();
    connection.disconnect();
    await q.close();
    return job.id ?? '';
  }

  return { redis, prefixes, running, settingsFor, api, failedJob };
}
