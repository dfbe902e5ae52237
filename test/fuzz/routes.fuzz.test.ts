/**
 * Fuzzing every route of the contract (../../../shared/opi-contract.md) against the API in-process, with
 * real Redis and BullMQ and no worker, so whatever a request enqueues stays in the queue to be looked at.
 * Requests go over a raw socket: hostile paths, headers and bodies arrive as sent.
 *
 * For every answer: never a 5xx or a hang; a 4xx from the API carries a JSON error body; a refusal
 * records and enqueues nothing; and everything a worker would read after an accepted request (the
 * records its jobs point to) translates into Kubernetes objects whose names, labels, annotations and
 * namespaces the API server accepts.
 *
 * And CC's nulls, over every route that takes a body: CC sends a Ruby nil as `null`, so any field it may
 * leave out may come as `null` and must mean the same as absent (accepted, recorded alike); any such field
 * left out is accepted; a required field set to `null` is a 400 naming it. Which fields CC may leave out
 * is asked of the contract's schemas (schema-fields.ts), so the list cannot drift from them.
 */
import { randomUUID } from 'node:crypto';
import { type Server, createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import fc from 'fast-check';
import type { Redis } from 'ioredis';
import type { z } from 'zod';
import {
  describeIssues,
  desireLrpSchema,
  stagingRequestSchema,
  taskRequestSchema,
  updateLrpSchema,
} from '@opi/contract';
import { createLogger } from '@opi/logging';
import { JobProducer, producerConnection } from '@opi/queue';
import { StateStore, TaskStore, parseInboxEntry } from '@opi/state';
import { createApp } from '../../apps/api/src/index.js';
import { type JsonPath, deletePath, formatPath, setPath } from '../support/body-paths.js';
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
import { namesField, pickField } from '../support/schema-fields.js';

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

/** Sends `c` and checks the answer (see the file's comment); the answer, or undefined when Node closed the connection. */
async function check(c: Case): Promise<RawAnswer | undefined> {
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
    },
    600_000,
  );
});

// ---------------------------------------------------------------------------------------------------
// CC's nulls: optional fields as null or left out, required fields as null

/** Who a request is about: an LRP's guid and version; a task or staging guid is `guid`. */
interface Identity {
  guid: string;
  version: string;
}

const freshIdentity = (): Identity => ({ guid: randomUUID(), version: randomUUID() });

/** `value` with the identity's guids written as placeholders, so records of two identities compare. */
function anonymise(value: unknown, id: Identity): unknown {
  if (value === undefined) return undefined;
  const text = JSON.stringify(value)
    .split(`${id.guid}-${id.version}`)
    .join('<process_guid>')
    .split(id.guid)
    .join('<guid>')
    .split(id.version)
    .join('<version>');
  return JSON.parse(text) as unknown;
}

/** A route that takes one of CC's bodies. */
interface BodyRoute {
  name: string;
  schema: z.ZodType;
  /** Bodies as the arbitrary makes them (filtered to contract-valid ones below). */
  bodies: fc.Arbitrary<Body>;
  /** The status CC expects. */
  ok: number;
  /** The body for `id`: the identity fields it carries (guid, version, process_guid, staging_guid) set to id's. */
  withIdentity(body: Body, id: Identity): Body;
  request(body: Body, id: Identity): Case;
  /** What must exist first (an update needs its LRP). */
  prepare?(id: Identity): Promise<void>;
  /** What the request recorded, anonymised: for LRPs the record and the GET answer, else the record. */
  state(id: Identity): Promise<unknown>;
}

/** An LRP to update: what CC would have desired, with routes an update may replace. */
function desireFor(id: Identity): Body {
  return {
    guid: id.guid,
    version: id.version,
    process_guid: `${id.guid}-${id.version}`,
    instances: 2,
    memory_mb: 256,
    disk_mb: 1024,
    ports: [8080],
    last_updated: '1589212345.123456',
    lifecycle: { docker_lifecycle: { image: 'nginx:1.25', command: [] } },
    routes: { 'cf-router': [{ hostname: 'app.example.com', port: 8080 }] },
  };
}

async function lrpState(id: Identity): Promise<unknown> {
  const rec = await store.get(`${id.guid}-${id.version}`);
  if (!rec) return undefined;
  const got = await send(port, { method: 'GET', path: `/apps/${id.guid}/${id.version}`, headers: [] });
  return anonymise(
    {
      record: rec.state === 'desired' ? rec.lrp : rec,
      get: { status: got.status, body: JSON.parse(got.body) as unknown },
    },
    id,
  );
}

const BODY_ROUTES: BodyRoute[] = [
  {
    name: 'PUT /apps/:process_guid (desire)',
    schema: desireLrpSchema,
    bodies: desireBody,
    ok: 202,
    withIdentity: (b, id) => ({
      ...b,
      guid: id.guid,
      version: id.version,
      process_guid: `${id.guid}-${id.version}`,
    }),
    request: (b, id) => clean('PUT', `/apps/${id.guid}-${id.version}`, b, { route: 'desire', body: b }),
    state: lrpState,
  },
  {
    name: 'POST /apps/:process_guid (update)',
    schema: updateLrpSchema,
    bodies: updateBody,
    ok: 200,
    withIdentity: (b, id) => ({ ...b, guid: id.guid, version: id.version }),
    request: (b, id) => clean('POST', `/apps/${id.guid}-${id.version}`, b, { route: 'update' }),
    prepare: async (id) => {
      const body = desireFor(id);
      const a = await check(clean('PUT', `/apps/${id.guid}-${id.version}`, body, { route: 'desire', body }));
      if (a?.status !== 202) throw new Error(`desiring the LRP to update: ${a?.status} ${a?.body}`);
    },
    state: lrpState,
  },
  {
    name: 'POST /tasks/:task_guid',
    schema: taskRequestSchema,
    bodies: taskBody,
    ok: 202,
    withIdentity: (b) => b,
    request: (b, id) => clean('POST', `/tasks/${id.guid}`, b, { route: 'task' }),
    state: async (id) => anonymise((await tasks.getTask(id.guid))?.task, id),
  },
  {
    name: 'POST /stage/:staging_guid',
    schema: stagingRequestSchema,
    // CC's stager client sends staging_guid; the path has it too.
    bodies: fc
      .tuple(stagingBody as fc.Arbitrary<Body>, fc.boolean())
      .map(([b, withGuid]) => (withGuid ? { ...b, staging_guid: 'the-staging-guid' } : b)),
    ok: 202,
    withIdentity: (b, id) => (typeof b['staging_guid'] === 'string' ? { ...b, staging_guid: id.guid } : b),
    request: (b, id) => clean('POST', `/stage/${id.guid}`, b, { route: 'stage' }),
    state: async (id) => anonymise((await tasks.getStaging(id.guid))?.staging, id),
  },
];

/** Room left under the body limit: each null may be longer than the value it replaces ("" → null). */
const NULL_ROOM = 16 * 1024;

/** The route's bodies as they go on the wire (JSON), only those the schema accepts and the limit allows. */
function validBodies(route: BodyRoute): fc.Arbitrary<Body> {
  return route.bodies
    .map((b) => JSON.parse(JSON.stringify(b)) as Body)
    .filter(
      (b) =>
        Buffer.byteLength(JSON.stringify(b)) <= BODY_LIMIT - NULL_ROOM &&
        route.schema.safeParse(route.withIdentity(b, freshIdentity())).success,
    );
}

/**
 * Fields left out one after another, each one the schema still accepts the body without (the choice
 * made again after each, so a set of them is accepted together too): `picks` chooses among them.
 */
function omitSome(
  schema: z.ZodType,
  body: Body,
  picks: readonly number[],
): { paths: JsonPath[]; omitted: Body } {
  const paths: JsonPath[] = [];
  let omitted = body;
  for (const pick of picks) {
    const path = pickField(schema, omitted, pick, 'omittable');
    if (path === undefined) break;
    paths.push(path);
    omitted = deletePath(omitted, path);
  }
  return { paths, omitted };
}

/** `body` with null at each of `paths`. */
function nullAt(body: Body, paths: readonly JsonPath[]): Body {
  return paths.reduce((b, p) => setPath(b, p, null), body);
}

/** A path with array indexes as `*`, to count which fields were tried. */
const fieldName = (p: JsonPath): string => p.map((k) => (typeof k === 'number' ? '*' : k)).join('.');

/** The message of an error answer, in either of the contract's shapes. */
function errorMessage(a: RawAnswer): string {
  try {
    const b = JSON.parse(a.body) as { error?: { message?: unknown }; message?: unknown };
    const m = b.error?.message ?? b.message;
    return typeof m === 'string' ? m : '';
  } catch {
    return '';
  }
}

/** A few fields at a time mostly; sometimes many, down to a body with nothing left that CC may omit. */
const fewPicks = fc.array(fc.nat(), { minLength: 1, maxLength: 3 });
const manyPicks = fc.array(fc.nat(), { minLength: 4, maxLength: 80 });

const tried = new Map<string, Set<string>>();

function noteTried(kind: string, paths: readonly JsonPath[]): void {
  const names = tried.get(kind) ?? new Set<string>();
  for (const p of paths) names.add(fieldName(p));
  tried.set(kind, names);
}

function reportTried(kind: string): void {
  const names = [...(tried.get(kind) ?? [])].sort();
  process.stdout.write(`  ${kind}: ${names.length} distinct fields: ${names.join(', ')}\n`);
}

describe('CC nulls: optional fields null or left out, required fields null', () => {
  const routes = BODY_ROUTES.map((r) => [r.name, r] as const);

  it.each(routes)(
    '%s: the schema reads any field CC may omit, set to null, as left out; a required one null is refused naming it',
    async (name, route) => {
      const kind = `schema ${name}`;
      await fuzz(
        kind,
        fc.property(validBodies(route), fc.oneof(fewPicks, manyPicks), fc.nat(), (raw, picks, pick) => {
          const base = route.withIdentity(raw, freshIdentity());
          const { paths, omitted } = omitSome(route.schema, base, picks);
          noteTried(kind, paths);
          if (paths.length) {
            const nulled = route.schema.safeParse(nullAt(base, paths));
            if (!nulled.success) {
              throw new Error(
                `null at ${paths.map(formatPath).join(', ')} refused (left out it is accepted): ${describeIssues(nulled.error)}`,
              );
            }
            try {
              expect(nulled.data).toEqual(route.schema.parse(omitted));
            } catch (err) {
              throw new Error(
                `null at ${paths.map(formatPath).join(', ')} read otherwise than left out:\n${(err as Error).message}`,
              );
            }
          }
          const path = pickField(route.schema, base, pick, 'required');
          if (path === undefined) return;
          const r = route.schema.safeParse(setPath(base, path, null));
          if (r.success) throw new Error(`required ${formatPath(path)} accepted as null`);
          const message = describeIssues(r.error);
          if (!namesField(message, path)) {
            throw new Error(`required ${formatPath(path)} as null: the message does not name it: ${message}`);
          }
        }),
        200,
      );
      reportTried(kind);
    },
    120_000,
  );

  it.each(routes)(
    '%s: any field CC may omit, sent as null, is accepted and recorded as if left out',
    async (name, route) => {
      const kind = `null ${name}`;
      await fuzz(
        kind,
        fc.asyncProperty(
          validBodies(route),
          fc.oneof({ arbitrary: fewPicks, weight: 4 }, { arbitrary: manyPicks, weight: 1 }),
          async (raw, picks) => {
            const a = freshIdentity();
            const b = freshIdentity();
            const { paths, omitted } = omitSome(route.schema, route.withIdentity(raw, a), picks);
            if (!paths.length) return;
            noteTried(kind, paths);
            const where = paths.map(formatPath).join(', ');
            await route.prepare?.(a);
            await route.prepare?.(b);
            const left = await check(route.request(omitted, a));
            if (left?.status !== route.ok) {
              throw new Error(`without ${where}: ${left?.status} ${left?.body.slice(0, 500)}`);
            }
            const nulled = await check(route.request(nullAt(route.withIdentity(raw, b), paths), b));
            if (nulled?.status !== route.ok) {
              throw new Error(`with null at ${where}: ${nulled?.status} ${nulled?.body.slice(0, 500)}`);
            }
            const [withNull, without] = [await route.state(b), await route.state(a)];
            if (without === undefined) throw new Error(`without ${where}: nothing recorded`);
            try {
              expect(withNull).toEqual(without);
            } catch (err) {
              throw new Error(
                `null at ${where} recorded otherwise than left out:\n${(err as Error).message}`,
              );
            }
          },
        ),
        80,
      );
      reportTried(kind);
    },
    300_000,
  );

  it.each(routes)(
    '%s: any fields CC may omit, left out (down to a minimal body), are accepted',
    async (name, route) => {
      const kind = `omitted ${name}`;
      await fuzz(
        kind,
        fc.asyncProperty(validBodies(route), fc.oneof(fewPicks, manyPicks), async (raw, picks) => {
          const id = freshIdentity();
          const { paths, omitted } = omitSome(route.schema, route.withIdentity(raw, id), picks);
          noteTried(kind, paths);
          await route.prepare?.(id);
          const a = await check(route.request(omitted, id));
          if (a?.status !== route.ok) {
            throw new Error(
              `without ${paths.map(formatPath).join(', ')}: ${a?.status} ${a?.body.slice(0, 500)}`,
            );
          }
          if ((await route.state(id)) === undefined) throw new Error('accepted, but nothing recorded');
        }),
        50,
      );
      reportTried(kind);
    },
    300_000,
  );

  it.each(routes)(
    '%s: a required field set to null is a 400 whose message names the field',
    async (name, route) => {
      const kind = `required null ${name}`;
      await fuzz(
        kind,
        fc.asyncProperty(validBodies(route), fc.nat(), async (raw, pick) => {
          const id = freshIdentity();
          const base = route.withIdentity(raw, id);
          const path = pickField(route.schema, base, pick, 'required');
          if (path === undefined) return;
          noteTried(kind, [path]);
          await route.prepare?.(id);
          const before = await route.state(id);
          const a = await check(route.request(setPath(base, path, null), id));
          if (a?.status !== 400) {
            throw new Error(`required ${formatPath(path)} as null: ${a?.status} ${a?.body.slice(0, 500)}`);
          }
          const message = errorMessage(a);
          if (!namesField(message, path)) {
            throw new Error(`required ${formatPath(path)} as null: the message does not name it: ${message}`);
          }
          // check() saw no write; the record (an update's LRP) is as it was.
          expect(await route.state(id)).toEqual(before);
        }),
        60,
      );
      reportTried(kind);
    },
    300_000,
  );
});
