/**
 * Fuzzing every route of the contract (../../../shared/opi-contract.md) against the API in-process, with
 * real Redis and BullMQ and no worker, so whatever a request enqueues stays in the queue to be looked at.
 * Requests go over a raw socket: hostile paths, headers and bodies arrive as sent.
 *
 * For every answer: never a 5xx or a hang; a 4xx from the API carries a JSON error body; a refusal
 * records and enqueues nothing; and everything a worker would read after an accepted request (the
 * records its jobs point to) translates into Kubernetes objects whose names, labels, annotations and
 * namespaces the API server accepts.
 */
import { randomUUID } from 'node:crypto';
import { type Server, createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import fc from 'fast-check';
import type { Redis } from 'ioredis';
import { createLogger } from '@opi/logging';
import { JobProducer, producerConnection } from '@opi/queue';
import { StateStore, TaskStore, parseInboxEntry } from '@opi/state';
import { createApp } from '../../apps/api/src/index.js';
import {
  type Body,
  type RawBody,
  anyName,
  desireBody,
  extraHeaders,
  rawBody,
  stagingBody,
  taskBody,
  updateBody,
} from './arbitraries.js';
import {
  lrpObjectProblems,
  stagingObjectProblems,
  stoppedProblems,
  taskObjectProblems,
} from './k8s-validate.js';
import { type RawAnswer, type RawRequest, send } from './raw-http.js';
import { fuzz } from './run.js';

const REDIS_URL = 'redis://127.0.0.1:6379';
const PREFIX = `fuzz-${randomUUID().slice(0, 8)}`;
const NAMESPACE = 'cf-workloads';
/** The service's default OPI_BODY_LIMIT_BYTES. */
const BODY_LIMIT = 1024 * 1024;

let redis: Redis;
let store: StateStore;
let tasks: TaskStore;
let producer: JobProducer;
let server: Server;
let port: number;

beforeAll(async () => {
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
});

afterAll(async () => {
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
});

// ---------------------------------------------------------------------------------------------------
// Requests

/** A few LRPs, tasks and stagings that requests share, so updates, stops and gets meet existing ones. */
const POOL = Array.from({ length: 4 }, () => ({ guid: randomUUID(), version: randomUUID() }));
const TASK_POOL = Array.from({ length: 4 }, () => randomUUID());

/** What a request is about, for the checks after it. */
type Intent = { route: 'desire'; body?: Body } | { route: 'update' | 'task' | 'stage' | 'other' };

interface Case {
  request: RawRequest;
  intent: Intent;
}

/** Percent-encodes the UTF-8 bytes of `s` (encodeURIComponent throws on a lone surrogate). */
function pct(s: string): string {
  let out = '';
  for (const b of Buffer.from(s, 'utf8')) {
    const c = String.fromCharCode(b);
    out += /[A-Za-z0-9\-_.~]/.test(c) ? c : `%${b.toString(16).toUpperCase().padStart(2, '0')}`;
  }
  return out;
}

/** A path segment: usually the proper value, else a hostile name, percent-encoded or raw. */
function segment(proper: fc.Arbitrary<string>): fc.Arbitrary<string> {
  return fc.oneof(
    { arbitrary: proper.map(pct), weight: 6 },
    { arbitrary: anyName.map(pct), weight: 3 },
    // Raw: only what would end the request line is escaped; '/', '%', '..' and non-ASCII go as they are.
    { arbitrary: anyName.map((s) => s.replace(/[\s\0]/g, pct)), weight: 2 },
    { arbitrary: anyName, weight: 1 },
  );
}

const poolPair = fc.constantFrom(...POOL);
const guidPair = fc.oneof(poolPair, fc.record({ guid: fc.uuid(), version: fc.uuid() }));
const jsonHeaders = (b: RawBody): [string, string][] => [
  ...(b.contentType === undefined ? [] : ([['Content-Type', b.contentType]] as [string, string][])),
  ...(b.contentEncoding === undefined
    ? []
    : ([['Content-Encoding', b.contentEncoding]] as [string, string][])),
];

/** A desire body, its guid and version often from the pool. */
const desire = fc
  .tuple(desireBody, fc.option(poolPair, { freq: 2 }))
  .map(([b, p]) => (p ? { ...b, ...p, process_guid: `${p.guid}-${p.version}` } : b));

const JSON_TYPE: [string, string][] = [['Content-Type', 'application/json']];

/** A request as CC sends it: the proper path, JSON, no other headers. */
function clean(method: string, path: string, body: Body, intent: Intent): Case {
  return { request: { method, path, headers: JSON_TYPE, body: Buffer.from(JSON.stringify(body)) }, intent };
}

const desireClean: fc.Arbitrary<Case> = desire.map((body) =>
  clean('PUT', `/apps/${pct(body.process_guid)}`, body, { route: 'desire', body }),
);

const desireHostile: fc.Arbitrary<Case> = desire.chain((body) =>
  fc
    .record({
      path: segment(fc.constant(body.process_guid)),
      raw: rawBody(fc.constant(body)),
      headers: extraHeaders,
      method: fc.constantFrom('PUT', 'PUT', 'PUT', 'put', 'PATCH'),
    })
    .map(({ path, raw, headers, method }) => ({
      request: { method, path: `/apps/${path}`, headers: [...jsonHeaders(raw), ...headers], body: raw.bytes },
      intent: { route: 'desire' as const, body },
    })),
);

const desireCase = fc.oneof(desireClean, desireHostile);

const update = fc
  .tuple(updateBody, fc.option(poolPair, { freq: 2 }))
  .map(([b, p]) => (p ? { ...b, ...p } : b));

const updateClean: fc.Arbitrary<Case> = update.map((body) =>
  clean('POST', `/apps/${pct(`${body.guid}-${body.version}`)}`, body, { route: 'update' }),
);

const updateHostile: fc.Arbitrary<Case> = update.chain((body) =>
  fc
    .record({
      path: segment(fc.constant(`${body.guid}-${body.version}`)),
      raw: rawBody(fc.constant(body as Body)),
      headers: extraHeaders,
    })
    .map(({ path, raw, headers }) => ({
      request: {
        method: 'POST',
        path: `/apps/${path}`,
        headers: [...jsonHeaders(raw), ...headers],
        body: raw.bytes,
      },
      intent: { route: 'update' as const },
    })),
);

/** The three-segment routes: get, stop, stop/:index, instances; CC sends no body, the fuzzer may. */
const lrpReadCase: fc.Arbitrary<Case> = fc
  .record({
    pair: guidPair,
    what: fc.constantFrom(
      ['GET', ''],
      ['PUT', '/stop'],
      ['PUT', '/stop/:index'],
      ['GET', '/instances'],
      ['DELETE', '/stop'],
    ),
    index: fc.oneof(
      fc.nat({ max: 12 }).map(String),
      fc.constantFrom('-1', '1.5', '1e3', '99999', '100000', '0x1', ' 1', '', '00', '٣', '9'.repeat(400)),
      anyName,
    ),
    headers: extraHeaders,
    body: fc.option(rawBody(fc.jsonValue() as fc.Arbitrary<Body>), { freq: 4 }),
  })
  .chain(({ pair, what, index, headers, body }) =>
    fc
      .record({
        g: segment(fc.constant(pair.guid)),
        v: segment(fc.constant(pair.version)),
        i: segment(fc.constant(index)),
      })
      .map(({ g, v, i }) => ({
        request: {
          method: what[0],
          path: `/apps/${g}/${v}${what[1].replace(':index', i)}`,
          headers: [...(body ? jsonHeaders(body) : []), ...headers],
          ...(body ? { body: body.bytes } : {}),
        },
        intent: { route: 'other' as const },
      })),
  );

const taskGuid = fc.oneof(fc.constantFrom(...TASK_POOL), fc.uuid());

const taskClean: fc.Arbitrary<Case> = fc
  .tuple(taskGuid, taskBody as fc.Arbitrary<Body>)
  .map(([g, body]) => clean('POST', `/tasks/${pct(g)}`, body, { route: 'task' }));

const taskHostile: fc.Arbitrary<Case> = fc
  .record({
    guid: segment(taskGuid),
    raw: rawBody(taskBody as fc.Arbitrary<Body>),
    headers: extraHeaders,
    method: fc.constantFrom('POST', 'POST', 'POST', 'GET', 'DELETE', 'PUT'),
  })
  .map(({ guid, raw, headers, method }) => ({
    request: {
      method,
      path: `/tasks/${guid}`,
      headers: [...jsonHeaders(raw), ...headers],
      ...(method === 'GET' ? {} : { body: raw.bytes }),
    },
    intent: { route: method === 'POST' ? ('task' as const) : ('other' as const) },
  }));

const staging = fc
  .tuple(fc.oneof(fc.constantFrom(...TASK_POOL), fc.uuid()), stagingBody as fc.Arbitrary<Body>, fc.boolean())
  .map(([g, b, withGuid]) => ({ g, body: withGuid ? { ...b, staging_guid: g } : b }));

const stageClean: fc.Arbitrary<Case> = staging.map(({ g, body }) =>
  clean('POST', `/stage/${pct(g)}`, body, { route: 'stage' }),
);

const stageHostile: fc.Arbitrary<Case> = staging.chain(({ g, body }) =>
  fc
    .record({ guid: segment(fc.constant(g)), raw: rawBody(fc.constant(body)), headers: extraHeaders })
    .map(({ guid, raw, headers }) => ({
      request: {
        method: 'POST',
        path: `/stage/${guid}`,
        headers: [...jsonHeaders(raw), ...headers],
        body: raw.bytes,
      },
      intent: { route: 'stage' as const },
    })),
);

const updateCase = fc.oneof(updateClean, updateHostile);
const taskCase = fc.oneof(taskClean, taskHostile);
const stageCase = fc.oneof(stageClean, stageHostile);

/** The lists, odd methods, and paths that match no route (traversal, doubled slashes, queries). */
const otherCase: fc.Arbitrary<Case> = fc
  .record({
    method: fc.constantFrom(
      'GET',
      'GET',
      'HEAD',
      'OPTIONS',
      'POST',
      'PUT',
      'DELETE',
      'PATCH',
      'TRACE',
      'FOO',
      'CONNECT',
    ),
    path: fc.oneof(
      fc.constantFrom(
        '/apps',
        '/tasks',
        '/apps/',
        '/tasks/',
        '/apps?x=1&x=2',
        '/apps?__proto__[x]=1',
        '//apps',
        '/apps/../tasks',
        '/apps/%2e%2e/tasks',
        '/./apps',
        '/APPS',
        '/apps/a/b/c/d/e',
        '/stage',
        '/stage/',
        '*',
        'http://evil.example/apps',
        '/%',
        '/%00',
        '/apps/%c0%ae%c0%ae/x',
      ),
      fc.webPath(),
      fc.array(segment(anyName), { maxLength: 6 }).map((s) => `/${s.join('/')}`),
    ),
    headers: extraHeaders,
    body: fc.option(rawBody(fc.jsonValue() as fc.Arbitrary<Body>), { freq: 3 }),
  })
  .map(({ method, path, headers, body }) => ({
    request: {
      method,
      path,
      headers: [...(body ? jsonHeaders(body) : []), ...headers],
      ...(body ? { body: body.bytes } : {}),
    },
    intent: { route: 'other' as const },
  }));

// ---------------------------------------------------------------------------------------------------
// Checks

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

async function check(c: Case): Promise<void> {
  const generationBefore = await redis.get(store.keys.generation);
  const tasksBefore = await redis.scard(store.keys.tasks);
  let a: RawAnswer;
  try {
    a = await send(port, c.request);
  } catch (err) {
    // Node's HTTP server closes a CONNECT (a tunnel request) it has no handler for, without an answer.
    if (c.request.method === 'CONNECT') {
      counts.protocol++;
      return;
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
    return;
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
    return;
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
}

const anyCase: fc.Arbitrary<Case> = fc.oneof(
  { arbitrary: desireCase, weight: 5 },
  { arbitrary: updateCase, weight: 2 },
  { arbitrary: lrpReadCase, weight: 3 },
  { arbitrary: taskCase, weight: 3 },
  { arbitrary: stageCase, weight: 2 },
  { arbitrary: otherCase, weight: 2 },
);

describe('fuzzing every route', () => {
  it.each([
    ['PUT /apps/:process_guid (desire)', desireCase, 800],
    ['POST /apps/:process_guid (update)', updateCase, 400],
    ['GET, PUT stop, stop/:index, instances of /apps/:guid/:version', lrpReadCase, 500],
    ['POST, GET, DELETE /tasks/:task_guid', taskCase, 500],
    ['POST /stage/:staging_guid', stageCase, 400],
    ['lists, other methods and unknown paths', otherCase, 400],
    ['any route, interleaved', anyCase, 1500],
  ] as const)(
    '%s: never a 5xx, a 4xx has an error body and changes nothing, an accepted request yields valid objects',
    async (name, arb, base) => {
      counts = { answered: 0, accepted: 0, refused: 0, protocol: 0 };
      statuses.clear();
      await fuzz(name, fc.asyncProperty(arb, check), base);
      process.stdout.write(
        `  ${name}: ${counts.accepted} accepted, ${counts.refused} refused by the API, ${counts.protocol} by Node's parser; ` +
          `statuses ${JSON.stringify(Object.fromEntries([...statuses].sort((x, y) => x[0] - y[0])))}\n`,
      );
      // Still serving after all that.
      const alive = await send(port, { method: 'GET', path: '/apps', headers: [] });
      expect(alive.status).toBe(200);
    },
    600_000,
  );
});
