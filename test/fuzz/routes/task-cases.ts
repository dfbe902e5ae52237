/**
 * Cases for the task and staging routes: as CC sends them, or with hostile paths, bodies, methods and
 * headers.
 */
import fc from 'fast-check';
import { type Body, extraHeaders, rawBody, stagingBody, taskBody } from '../arbitraries.js';
import { type Case, TASK_POOL, clean, jsonHeaders, pct, segment } from './requests.js';

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

export const taskCase = fc.oneof(taskClean, taskHostile);
export const stageCase = fc.oneof(stageClean, stageHostile);
