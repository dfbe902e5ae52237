/**
 * The routes that take one of CC's bodies, for the CC-nulls properties: the bodies each takes, how a
 * request for an identity is made, what it recorded; and bodies with fields left out or set to null.
 */
import { randomUUID } from 'node:crypto';
import fc from 'fast-check';
import type { z } from 'zod';
import { desireLrpSchema, stagingRequestSchema, taskRequestSchema, updateLrpSchema } from '@opi/contract';
import { type JsonPath, deletePath, setPath } from '../../support/body-paths.js';
import { pickField } from '../../support/schema-fields.js';
import { type Body, desireBody, stagingBody, taskBody, updateBody } from '../arbitraries.js';
import { type RawAnswer, send } from '../raw-http.js';
import { BODY_LIMIT, check, port, store, tasks } from './fuzzed-api.js';
import { type Case, clean } from './requests.js';

/** Who a request is about: an LRP's guid and version; a task or staging guid is `guid`. */
interface Identity {
  guid: string;
  version: string;
}

export const freshIdentity = (): Identity => ({ guid: randomUUID(), version: randomUUID() });

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

export const BODY_ROUTES: BodyRoute[] = [
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
export function validBodies(route: BodyRoute): fc.Arbitrary<Body> {
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
export function omitSome(
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
export function nullAt(body: Body, paths: readonly JsonPath[]): Body {
  return paths.reduce((b, p) => setPath(b, p, null), body);
}

/** A path with array indexes as `*`, to count which fields were tried. */
export const fieldName = (p: JsonPath): string => p.map((k) => (typeof k === 'number' ? '*' : k)).join('.');

/** The message of an error answer, in either of the contract's shapes. */
export function errorMessage(a: RawAnswer): string {
  try {
    const b = JSON.parse(a.body) as { error?: { message?: unknown }; message?: unknown };
    const m = b.error?.message ?? b.message;
    return typeof m === 'string' ? m : '';
  } catch {
    return '';
  }
}
