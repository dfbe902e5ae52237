/**
 * Raw requests: body bytes (valid, mutated, any JSON, deeply nested, huge, not JSON at all) with the type
 * and encoding they claim, and extra headers.
 */
import fc from 'fast-check';
import { type Body, deepJson, mutated } from './mutations.js';

/** A request body as bytes, and how it claims to be encoded. */
export interface RawBody {
  bytes: Buffer;
  contentType: string | undefined;
  contentEncoding?: string;
}

const contentType = fc.oneof(
  { arbitrary: fc.constant('application/json'), weight: 8 },
  {
    arbitrary: fc.constantFrom(
      undefined,
      'application/json; charset=utf-8',
      'application/json; charset=utf-16',
      'application/json; charset=bogus',
      'text/plain',
      'application/x-www-form-urlencoded',
      'multipart/form-data; boundary=x',
      'application/octet-stream',
      '*/*',
      '',
      'application/json;;;',
      'ü/ü',
    ),
    weight: 3,
  },
  { arbitrary: fc.string({ unit: 'grapheme-ascii', maxLength: 40 }), weight: 1 },
);

/** Bodies for a route that takes `valid` bodies: valid, mutated, any JSON, deep, huge, not JSON. */
export function rawBody(valid: fc.Arbitrary<Body>): fc.Arbitrary<RawBody> {
  const text: fc.Arbitrary<string> = fc.oneof(
    { arbitrary: valid.map((b) => JSON.stringify(b)), weight: 6 },
    { arbitrary: mutated(valid).map((b) => JSON.stringify(b)), weight: 6 },
    { arbitrary: fc.jsonValue().map((v) => JSON.stringify(v)), weight: 2 },
    { arbitrary: deepJson, weight: 1 },
    {
      arbitrary: fc
        .integer({ min: 100, max: 1500 })
        .map((k) => JSON.stringify({ guid: 'x'.repeat(k * 1024) })),
      weight: 1,
    },
    { arbitrary: fc.string({ unit: 'binary', maxLength: 200 }), weight: 2 },
    {
      arbitrary: fc.constantFrom('', 'null', '"x"', '1', 'true', '[]', '{}', '{', '{"a":}', '\u0000', 'NaN'),
      weight: 2,
    },
  );
  const bytes = fc.oneof(
    { arbitrary: text.map((t) => Buffer.from(t, 'utf8')), weight: 10 },
    { arbitrary: fc.uint8Array({ maxLength: 300 }).map((a) => Buffer.from(a)), weight: 1 },
  );
  return fc.record({
    bytes,
    contentType,
    contentEncoding: fc.option(fc.constantFrom('gzip', 'deflate', 'br', 'identity', 'bogus', 'gzip, gzip'), {
      nil: undefined,
      freq: 12,
    }),
  });
}

/** Extra request headers: ordinary, odd, large, many. */
export const extraHeaders: fc.Arbitrary<[string, string][]> = fc.oneof(
  { arbitrary: fc.constant([] as [string, string][]), weight: 6 },
  {
    arbitrary: fc.array(
      fc.tuple(
        fc.oneof(
          fc.constantFrom(
            'x-request-id',
            'authorization',
            'accept',
            'x-forwarded-for',
            'x-http-method-override',
            'expect',
            'range',
            'if-none-match',
            'cookie',
            'transfer-encoding',
          ),
          fc.stringMatching(/^[A-Za-z0-9!#$%&'*+.^_`|~-]{1,30}$/),
        ),
        fc.oneof(
          fc.string({ unit: 'grapheme-ascii', maxLength: 60 }).map((s) => s.replace(/[\r\n\0]/g, '')),
          fc.integer({ min: 1, max: 15 }).map((k) => 'h'.repeat(k * 1000)),
          fc.constantFrom('100-continue', 'bytes=0-1', 'Bearer x', 'chunked', '../../', '%00'),
        ),
      ),
      { maxLength: 6 },
    ),
    weight: 3,
  },
  {
    arbitrary: fc
      .integer({ min: 50, max: 200 })
      .map((n) => Array.from({ length: n }, (_, i): [string, string] => [`x-h${i}`, 'v'])),
    weight: 1,
  },
);
