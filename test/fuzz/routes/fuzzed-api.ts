/**
 * The API under fuzz: in-process with real Redis and BullMQ and no worker, so whatever a request enqueues
 * stays in the queue to be looked at; each case sent over a raw socket and its answer checked.
 */
import { randomUUID } from 'node:crypto';
import { type Server, createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { expect } from '@jest/globals';
import fc from 'fast-check';
import type { Redis } from 'ioredis';
import { createLogger } from '@opi/logging';
import { JobProducer, producerConnection } from '@opi/queue';
import { StateStore, TaskStore, parseInboxEntry } from '@opi/state';
import { createApp } from '../../../apps/api/src/index.js';
import {
  lrpObjectProblems,
  stagingObjectProblems,
  stoppedProblems,
  taskObjectProblems,
} from '../k8s-validate.js';
import { type RawAnswer, send } from '../raw-http.js';
import { fuzz } from '../run.js';
import type { Case } from './requests.js';

const REDIS_URL = 'redis://127.0.0.1:6379';
const PREFIX = `fuzz-${randomUUID().slice(0, 8)}`;
const NAMESPACE = 'cf-workloads';
/** The service's default OPI_BODY_LIMIT_BYTES. */
export const BODY_LIMIT = 1024 * 1024;

let redis: Redis;
export let store: StateStore;
export let tasks: TaskStore;
let producer: JobProducer;
let server: Server;
export let port: number;

/** Connects to Redis and starts the API on a free port (the test file's beforeAll). */
export async function startApi(): Promise<void> {
  redis = producerConnection(REDIS_URL);
  await new Promise<void>((resolve, reject) => {
    redis.once('ready', resolve);
    redis.once('error', reject);
  });
  store = new StateStore(redis, PREFIX);
  tasks = new TaskStore(redis, PREFIX);
  producer = new JobProducer({ connection: redis, prefix: PREFIX, attempts: 3 });
  const app = createApp({
    store,
    tasks,
    producer,
    logger: createLogger({ level: process.env['TEST_LOG_LEVEL'] ?? 'silent', pretty: false }),
    // Any namespace, so hostile ones reach the translation (the allow-list has its own tests).
    defaults: { namespace: NAMESPACE, dropletRegistry: 'droplets.example.com', allowedNamespaces: 'any' },
    bodyLimitBytes: BODY_LIMIT,
  });
  server = createServer(app);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  port = (server.address() as AddressInfo).port;
}

/** Stops the API and removes everything it wrote under its prefix (the test file's afterAll). */
export async function stopApi(): Promise<void> {
  await new Promise<void>((resolve) => {
    server.close(() => {
      resolve();
    });
  });
  for (const q of Object.values(producer.queues)) await q.obliterate({ force: true });
  await producer.close();
  let cursor = '0';
  do {
    const [next, found] = await redis.scan(cursor, 'MATCH', `${PREFIX}*`, 'COUNT', 1000);
    cursor = next;
    if (found.length) await redis.del(...found);
  } while (cursor !== '0');
  await redis.quit();
}

/** Node's HTTP parser refuses malformed requests (bad request line, header too large) before express sees them. */
const PROTOCOL_REFUSALS = new Set([400, 413, 417, 431]);

/** The contract's error bodies: `{"error": {"message"}}`, tasks' 404 `{"message"}`, instances' 404 `{..., "error"}`. */
function errorBodyProblem(a: RawAnswer): string | undefined {
  if (!/^application\/json/.test(a.headers.get('content-type') ?? '')) {
    return `a ${a.status} without a JSON body (content-type ${a.headers.get('content-type')})`;
  }
  let body: unknown;
  try {
    body = JSON.parse(a.body);
  } catch {
    return `a ${a.status} whose body is not JSON: ${a.body.slice(0, 200)}`;
  }
  const b = body as { error?: { message?: unknown } | string; message?: unknown };
  if (typeof b.error === 'object' && typeof b.error.message === 'string' && b.error.message) return undefined;
  if (typeof b.message === 'string' || typeof b.error === 'string') return undefined;
  return `a ${a.status} without an error message: ${a.body.slice(0, 200)}`;
}

const QUEUES = ['lrp', 'task', 'callback', 'sync'] as const;

/**
 * Every job the request enqueued, and every converge its write asked for in the inbox (no pump runs
 * here), then drained: the queues and the inbox are empty before each case.
 */
async function takeJobs(): Promise<{ name: string; data: Record<string, unknown> }[]> {
  const out: { name: string; data: Record<string, unknown> }[] = [];
  const [[, asked]] = (await redis.multi().lrange(store.keys.inbox, 0, -1).del(store.keys.inbox).exec()) as [
    [Error | null, string[]],
  ];
  for (const raw of asked) {
    const entry = parseInboxEntry(raw);
    out.push(
      entry
        ? { name: 'converge-lrp', data: { processGuid: entry.processGuid } }
        : { name: `unreadable inbox entry ${raw}`, data: {} },
    );
  }
  for (const q of QUEUES) {
    const queue = producer.queues[q];
    const jobs = await queue.getJobs(['wait', 'prioritized', 'delayed', 'waiting-children']);
    for (const j of jobs) out.push({ name: j.name, data: j.data as Record<string, unknown> });
    if (jobs.length) await queue.drain(true);
  }
  return out;
}

/** What a worker would read for a job, translated and checked. */
async function jobProblems(job: { name: string; data: Record<string, unknown> }): Promise<string[]> {
  switch (job.name) {
    case 'converge-lrp': {
      const rec = await store.get(String(job.data['processGuid']));
      if (!rec) return [`converge-lrp for ${String(job.data['processGuid'])} without a record`];
      if (rec.state === 'stopped') return stoppedProblems(rec);
      return lrpObjectProblems(rec.lrp, rec.lrp.namespace);
    }
    case 'run-task': {
      const rec = await tasks.getTask(String(job.data['taskGuid']));
      if (!rec) return [`run-task without a record`];
      return taskObjectProblems(rec.task, rec.task.namespace);
    }
    case 'stage': {
      const rec = await tasks.getStaging(String(job.data['stagingGuid']));
      if (!rec) return [`stage without a record`];
      return stagingObjectProblems(rec.staging, NAMESPACE);
    }
    case 'cancel-task': {
      const rec = await tasks.getTask(String(job.data['taskGuid']));
      return rec ? [] : ['cancel-task without a record'];
    }
    case 'stop-instance':
      return typeof job.data['podName'] === 'string' ? [] : ['stop-instance without a pod'];
    default:
      return [`unexpected job ${job.name}`];
  }
}

let counts = { answered: 0, accepted: 0, refused: 0, protocol: 0 };
const statuses = new Map<number, number>();

/**
 * Sends `c` and checks the answer: never a 5xx or a hang; a 4xx from the API carries a JSON error body; a
 * refusal records and enqueues nothing; and everything a worker would read after an accepted request (the
 * records its jobs point to) translates into Kubernetes objects whose names, labels, annotations and
 * namespaces the API server accepts. The answer, or undefined when Node closed the connection.
 */
export async function check(c: Case): Promise<RawAnswer | undefined> {
  const generationBefore = await redis.get(store.keys.generation);
  const tasksBefore = await redis.scard(store.keys.tasks);
  let a: RawAnswer;
  try {
    a = await send(port, c.request);
  } catch (err) {
    // Node's HTTP server closes a CONNECT (a tunnel request) it has no handler for, without an answer.
    if (c.request.method === 'CONNECT') {
      counts.protocol++;
      return undefined;
    }
    throw new Error(`no answer: ${(err as Error).message}`);
  }
  counts.answered++;
  statuses.set(a.status, (statuses.get(a.status) ?? 0) + 1);
  const jobs = await takeJobs();
  if (a.status >= 500) throw new Error(`answered ${a.status}: ${a.body.slice(0, 500)}`);
  if (!a.headers.has('x-request-id')) {
    // Not the API's answer: Node refused the request line or headers.
    if (!PROTOCOL_REFUSALS.has(a.status)) throw new Error(`answered ${a.status} outside the API`);
    counts.protocol++;
    if (jobs.length) throw new Error('a request refused by the HTTP parser enqueued jobs');
    return a;
  }
  if (a.status >= 400) {
    counts.refused++;
    const problem = c.request.method.toUpperCase() === 'HEAD' ? undefined : errorBodyProblem(a);
    if (problem) throw new Error(problem);
    if (jobs.length) throw new Error(`a ${a.status} enqueued ${jobs.map((j) => j.name).join(', ')}`);
    if ((await redis.get(store.keys.generation)) !== generationBefore)
      throw new Error(`a ${a.status} changed a record`);
    if ((await redis.scard(store.keys.tasks)) !== tasksBefore)
      throw new Error(`a ${a.status} recorded a task`);
    return a;
  }
  counts.accepted++;
  if (a.status >= 300) throw new Error(`answered ${a.status}`);
  const problems: string[] = [];
  for (const job of jobs) problems.push(...(await jobProblems(job)));
  if (c.intent.route === 'desire' && c.intent.body) {
    // Whatever it was before, the LRP the body names is desired now, in the namespace asked for.
    const body = c.intent.body;
    const rec = await store.get(String(body['process_guid']));
    if (rec?.state !== 'desired') problems.push(`a ${a.status} to a desire left no desired record`);
    else {
      const ns = typeof body['namespace'] === 'string' && body['namespace'] ? body['namespace'] : NAMESPACE;
      if (rec.lrp.namespace !== ns && rec.generation > Number(generationBefore ?? 0)) {
        problems.push(`desired in namespace ${rec.lrp.namespace}, asked ${ns}`);
      }
      problems.push(...lrpObjectProblems(rec.lrp, rec.lrp.namespace));
    }
  }
  if (problems.length) throw new Error(`accepted (${a.status}), but:\n${problems.join('\n')}`);
  return a;
}

/** `base` runs (scaled) of `arb`'s cases through check(); prints what was answered; the API still serves. */
export async function fuzzRoute(name: string, arb: fc.Arbitrary<Case>, base: number): Promise<void> {
  counts = { answered: 0, accepted: 0, refused: 0, protocol: 0 };
  statuses.clear();
  await fuzz(
    name,
    fc.asyncProperty(arb, async (c) => {
      await check(c);
    }),
    base,
  );
  process.stdout.write(
    `  ${name}: ${counts.accepted} accepted, ${counts.refused} refused by the API, ${counts.protocol} by Node's parser; ` +
      `statuses ${JSON.stringify(Object.fromEntries([...statuses].sort((x, y) => x[0] - y[0])))}\n`,
  );
  // Still serving after all that.
  const alive = await send(port, { method: 'GET', path: '/apps', headers: [] });
  expect(alive.status).toBe(200);
}
