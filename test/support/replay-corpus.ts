/**
 * The replay corpus (test/replay/corpus): one JSON file per request CC's OPI clients send, with what must
 * follow. Loaded, checked against the fixture format, and put in an order that honours each `after`.
 */
import { readFileSync, readdirSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { z } from 'zod';
import type { CcCall } from './cc-opi-client.js';

export const CORPUS_DIR = resolve(dirname(fileURLToPath(import.meta.url)), '../replay/corpus');

/** The subfolders, in the order their fixtures are replayed when nothing else decides. */
const GROUPS = ['apps', 'instances', 'tasks', 'staging'];

const expectation = z.strictObject({
  /** The HTTP status the server must answer. */
  status: z.int().optional(),
  /** Deployment: one with the LRP's labels in the workloads namespace; Job: one with the task's or staging's. */
  creates: z.enum(['Deployment', 'Job']).optional(),
  /** Pods of the LRP running and ready. */
  running: z.int().optional(),
  /** After an update: the Deployment's replicas, and the annotation GET /apps shows. */
  replicas: z.int().optional(),
  annotation: z.string().optional(),
  deletes: z.literal('Deployment').optional(),
  /** What the CC client method returns: null and arrays exactly, objects as a subset. */
  outcome: z.unknown().optional(),
  /** The returned list holds entries matching these (as subsets). */
  contains: z.array(z.unknown()).optional(),
  /** lrp_instances eventually returns this many instances, all in this state. */
  instances: z.strictObject({ count: z.int(), state: z.string() }).optional(),
  /** CC raises this ApiError, with a non-empty reason. */
  raises: z.strictObject({ name: z.enum(['RunnerError', 'TaskError']) }).optional(),
  /** The task completion CC receives (a subset of its body). */
  completion: z.strictObject({ failed: z.boolean(), failure_reason: z.string().optional() }).optional(),
  /** The staging completion CC receives: a result or an error. */
  reports: z.enum(['result', 'error']).optional(),
  /** The staging error CC receives, exactly. */
  error: z.strictObject({ id: z.string(), message: z.string() }).optional(),
});

const fixtureSchema = z.strictObject({
  client: z.enum(['apps_rest_client', 'instances_client', 'task_client', 'stager_client']),
  method: z.string(),
  variant: z.string(),
  /** The CC code (file:lines at a commit) and spec lines the request follows. */
  follows: z.string(),
  /** Fixtures (ids) whose request and expectations must be done first. */
  after: z.array(z.string()).optional(),
  process: z.strictObject({ state: z.enum(['STARTED', 'STOPPED']), instances: z.int() }).optional(),
  request: z.strictObject({
    method: z.enum(['GET', 'PUT', 'POST', 'DELETE']),
    path: z.string().startsWith('/'),
    body: z.unknown().optional(),
  }),
  expect: expectation,
});

export type Expectation = z.infer<typeof expectation>;

export interface Fixture extends CcCall {
  /** The path below the corpus without `.json`, e.g. `apps/desire-docker-public-port`. */
  id: string;
  variant: string;
  follows: string;
  after: string[];
  expect: Expectation;
}

function files(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? files(join(dir, e.name)) : e.name.endsWith('.json') ? [join(dir, e.name)] : [],
  );
}

export function loadFixture(path: string): Fixture {
  const id = relative(CORPUS_DIR, path).replace(/\.json$/, '');
  const r = fixtureSchema.safeParse(JSON.parse(readFileSync(path, 'utf8')));
  if (!r.success) throw new Error(`fixture ${id}: ${r.error.message}`);
  const { after, ...rest } = r.data;
  return { id, ...rest, after: after ?? [] };
}

/** Every fixture, each after the ones it names in `after`, otherwise by group and name. */
export function loadCorpus(): Fixture[] {
  const rank = (id: string) => GROUPS.indexOf(id.split('/')[0] ?? '');
  const all = files(CORPUS_DIR)
    .map(loadFixture)
    .sort((a, b) => rank(a.id) - rank(b.id) || a.id.localeCompare(b.id));
  const byId = new Map(all.map((f) => [f.id, f]));
  for (const f of all) {
    for (const dep of f.after) if (!byId.has(dep)) throw new Error(`fixture ${f.id}: unknown "after" ${dep}`);
  }
  const done = new Set<string>();
  const ordered: Fixture[] = [];
  while (ordered.length < all.length) {
    const next = all.find((f) => !done.has(f.id) && f.after.every((d) => done.has(d)));
    if (!next) throw new Error('the corpus has an "after" cycle');
    done.add(next.id);
    ordered.push(next);
  }
  return ordered;
}

/** CC builds callbacks from its own internal host; at replay they go to the fake CC instead. */
export function withCallbackAt(f: Fixture, ccUrl: string): Fixture {
  const body = f.request.body;
  if (typeof body !== 'object' || body === null || !('completion_callback' in body)) return f;
  const cb = body.completion_callback;
  if (typeof cb !== 'string') return f;
  const url = new URL(cb);
  const moved = `${ccUrl}${url.pathname}${url.search}`;
  return { ...f, request: { ...f.request, body: { ...body, completion_callback: moved } } };
}

/** The fixture's image without its registry: docker's rules (a first part with `.`/`:` or localhost is a host). */
export function imagePath(image: string): { repository: string; tag: string } {
  const parts = image.split('/');
  const first = parts[0] ?? '';
  if (parts.length > 1 && (first.includes('.') || first.includes(':') || first === 'localhost'))
    parts.shift();
  const rest = parts.join('/');
  const at = rest.lastIndexOf(':');
  return at > 0
    ? { repository: rest.slice(0, at), tag: rest.slice(at + 1) }
    : { repository: rest, tag: 'latest' };
}
