/**
 * Cases for the app routes: desires and updates (as CC sends them, or hostile), and the get, stop,
 * stop/:index and instances routes.
 */
import fc from 'fast-check';
import { type Body, anyName, desireBody, extraHeaders, rawBody, updateBody } from '../arbitraries.js';
import { type Case, clean, guidPair, jsonHeaders, pct, poolPair, segment } from './requests.js';

/** A desire body, its guid and version often from the pool. */
const desire = fc
  .tuple(desireBody, fc.option(poolPair, { freq: 2 }))
  .map(([b, p]) => (p ? { ...b, ...p, process_guid: `${p.guid}-${p.version}` } : b));

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

export const desireCase = fc.oneof(desireClean, desireHostile);

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

export const updateCase = fc.oneof(updateClean, updateHostile);

/** The three-segment routes: get, stop, stop/:index, instances; CC sends no body, the fuzzer may. */
export const lrpReadCase: fc.Arbitrary<Case> = fc
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
