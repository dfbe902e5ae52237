/** Callback URL handling: validation, redaction, credentials, the crash-report URL, Retry-After, statuses. */
import { describe, expect, it } from '@jest/globals';
import { crashReportUrl } from './bodies.js';
import { CallbackUrlError } from './errors.js';
import { basicAuthOf, classifyStatus, parseCallbackUrl, parseRetryAfter, redactUrl } from './url.js';

const PG = '0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0-11111111-2222-3333-4444-555555555555';

describe('parseCallbackUrl', () => {
  it.each([
    'http://cc.internal:9022/internal/v4/tasks/t1/completed',
    'https://cc.internal/internal/v3/staging/s1/build_completed?start=true',
    'http://user:pw@127.0.0.1:9022/x',
    'http://[::1]:9022/x',
  ])('accepts %s', (raw) => {
    expect(parseCallbackUrl(raw).href).toBe(new URL(raw).href);
  });

  it.each<[string, string, RegExp]>([
    ['relative', '/internal/v4/tasks/t1/completed', /not a valid absolute URL/],
    ['empty', '', /not a valid absolute URL/],
    ['garbage with credentials', 'http://user:s3cret@[not-a-host/x', /not a valid absolute URL/],
    ['ftp with credentials', 'ftp://user:s3cret@cc.internal/x', /must use http or https, not ftp:/],
    ['file', 'file:///etc/passwd', /must use http or https, not file:/],
    ['javascript', 'javascript:alert(1)', /must use http or https/],
  ])('rejects %s without echoing it', (_name, raw, message) => {
    let caught: unknown;
    try {
      parseCallbackUrl(raw);
    } catch (e) {
      caught = e;
    }
    expect(caught).toBeInstanceOf(CallbackUrlError);
    expect((caught as Error).message).toMatch(message);
    expect([JSON.stringify(caught), String(caught), (caught as Error).stack].join('\n')).not.toContain(
      's3cret',
    );
    expect((caught as Error).cause).toBeUndefined();
  });
});

describe('redactUrl', () => {
  it.each([
    [
      'http://user:s3cret@cc:9022/internal/v4/tasks/t/completed',
      'http://cc:9022/internal/v4/tasks/t/completed',
    ],
    [
      'https://cc/internal/v3/staging/s/build_completed?start=true&token=s3cret',
      'https://cc/internal/v3/staging/s/build_completed',
    ],
    ['https://:s3cret@cc', 'https://cc/'],
    ['not a url s3cret', '<invalid URL>'],
  ])('%s → %s', (raw, expected) => {
    expect(redactUrl(raw)).toBe(expected);
    expect(redactUrl(raw)).not.toContain('s3cret');
  });
});

describe('basicAuthOf', () => {
  it.each<[string, string | undefined]>([
    ['http://cc/x', undefined],
    ['http://internal_user:pa%20ss%40word@cc/x', 'internal_user:pa ss@word'],
    ['http://only-user@cc/x', 'only-user:'],
    ['http://:only-pw@cc/x', ':only-pw'],
  ])('%s', (raw, expected) => {
    expect(basicAuthOf(new URL(raw))).toBe(expected);
  });

  it('rejects malformed percent-encoding without echoing it', () => {
    expect(() => basicAuthOf(new URL('http://u:s3cret%E0%A4%A@cc/x'))).toThrow(CallbackUrlError);
    expect(() => basicAuthOf(new URL('http://u:s3cret%E0%A4%A@cc/x'))).not.toThrow(/s3cret/);
  });
});

describe('crashReportUrl', () => {
  it.each([
    ['https://cc.internal:9023', `https://cc.internal:9023/internal/v4/apps/${PG}/crashed`],
    ['https://cc.internal:9023/', `https://cc.internal:9023/internal/v4/apps/${PG}/crashed`],
    ['https://cc.internal:9023///', `https://cc.internal:9023/internal/v4/apps/${PG}/crashed`],
    ['http://cc/prefix', `http://cc/prefix/internal/v4/apps/${PG}/crashed`],
    ['http://cc/prefix//', `http://cc/prefix/internal/v4/apps/${PG}/crashed`],
    ['http://u:p@cc:9022', `http://u:p@cc:9022/internal/v4/apps/${PG}/crashed`],
  ])('%s', (base, expected) => {
    expect(crashReportUrl(base, PG)).toBe(expected);
  });

  it.each([
    ['a/b', 'a%2Fb'],
    ['a b', 'a%20b'],
    ['a?b#c', 'a%3Fb%23c'],
    ['a%2Fb', 'a%252Fb'],
    ['...', '...'],
  ])('encodes process guid %j as one path segment', (guid, encoded) => {
    const url = crashReportUrl('http://cc', guid);
    expect(url).toBe(`http://cc/internal/v4/apps/${encoded}/crashed`);
    expect(new URL(url).pathname.split('/')).toHaveLength(6);
  });

  it.each<[string, string, RegExp]>([
    ['ftp://cc', PG, /http or https/],
    ['cc.internal:9023', PG, /http or https|valid absolute/],
    ['http://cc?x=1', PG, /query or fragment/],
    ['http://cc#frag', PG, /query or fragment/],
    ['http://cc', '', /process guid/],
    ['http://cc', '.', /process guid/],
    ['http://cc', '..', /process guid/],
  ])('rejects base %j guid %j', (base, guid, message) => {
    expect(() => crashReportUrl(base, guid)).toThrow(CallbackUrlError);
    expect(() => crashReportUrl(base, guid)).toThrow(message);
  });
});

describe('parseRetryAfter', () => {
  const now = Date.parse('2024-05-01T12:00:00Z');
  it.each<[string | undefined, number | undefined]>([
    [undefined, undefined],
    ['0', 0],
    ['7', 7],
    [' 120 ', 120],
    ['Wed, 01 May 2024 12:00:30 GMT', 30],
    ['Wed, 01 May 2024 12:00:29 GMT', 29],
    ['Wed, 01 May 2024 11:00:00 GMT', 0],
    ['-5', undefined],
    ['1.5', undefined],
    ['soon', undefined],
    ['', undefined],
  ])('%j → %j', (value, expected) => {
    expect(parseRetryAfter(value, now)).toBe(expected);
  });
});

describe('classifyStatus', () => {
  it.each<[number, string]>([
    [200, 'delivered'],
    [201, 'delivered'],
    [204, 'delivered'],
    [301, 'rejected'],
    [400, 'rejected'],
    [401, 'rejected'],
    [404, 'rejected'],
    [422, 'rejected'],
    [408, 'unavailable'],
    [429, 'unavailable'],
    [500, 'unavailable'],
    [502, 'unavailable'],
    [503, 'unavailable'],
    [504, 'unavailable'],
  ])('%i → %s', (status, expected) => {
    expect(classifyStatus(status)).toBe(expected);
  });
});
