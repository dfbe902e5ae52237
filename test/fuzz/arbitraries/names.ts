/**
 * Names that try to escape (path traversal, other namespaces, encoded slashes, NUL, right-to-left marks,
 * emoji, 1,000 characters), and the label values and DNS labels the contract accepts.
 */
import fc from 'fast-check';

const LABEL_VALUE = /^[A-Za-z0-9]([A-Za-z0-9_.-]{0,61}[A-Za-z0-9])?$/;
const DNS_LABEL = /^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/;

/** Strings chosen to break something: traversal, other namespaces and objects, encodings, odd characters. */
export const HOSTILE = [
  '',
  ' ',
  '.',
  '..',
  '../',
  '../../kube-system',
  '..%2F..%2Fkube-system',
  '%2F',
  '%2e%2e%2f',
  '%00',
  '%',
  '%zz',
  '%E0%A4%A',
  'kube-system',
  'default',
  'cf-workloads',
  'kube-system/evil',
  'a/b',
  'a\\b',
  'a\u0000b',
  '\u0000',
  'UPPER-case',
  'a.b.c',
  '-leading',
  'trailing-',
  '_under_',
  'ümlaut',
  'ñ',
  '😀🚀',
  '\u202egnp.exe',
  '\u200b',
  '\r\nX-Injected: 1',
  '<script>alert(1)</script>',
  "'; DROP TABLE x; --",
  '${jndi:ldap://x}',
  '{{7*7}}',
  '__proto__',
  'constructor',
  'prototype',
  'toString',
  'hasOwnProperty',
  'null',
  'undefined',
  'NaN',
  '0',
  '-1',
  '1e400',
  'x'.repeat(62),
  'x'.repeat(63),
  'x'.repeat(64),
  'x'.repeat(254),
  'a'.repeat(1000),
  'A-'.repeat(500),
  '😀'.repeat(1000),
  'é'.repeat(1000),
  '.'.repeat(1000),
  '-'.repeat(1000),
];

export const hostile = fc.constantFrom(...HOSTILE);

/** A 1,000-character name made of a repeated random piece (any unicode). */
export const longName = fc
  .string({ unit: 'grapheme', minLength: 1, maxLength: 4 })
  .map((piece) => piece.repeat(Math.ceil(1000 / piece.length)).slice(0, 1000));

/** Any name-like string: hostile, unicode, binary, long, or ordinary. */
export const anyName: fc.Arbitrary<string> = fc.oneof(
  { arbitrary: hostile, weight: 4 },
  { arbitrary: fc.string({ unit: 'grapheme', maxLength: 40 }), weight: 3 },
  { arbitrary: fc.string({ unit: 'binary', maxLength: 40 }), weight: 2 },
  { arbitrary: fc.string({ unit: 'grapheme-ascii', maxLength: 80 }), weight: 2 },
  { arbitrary: longName, weight: 1 },
  { arbitrary: fc.uuid(), weight: 2 },
);

/** A name of at most `max` characters (what the contract still accepts), hostile or not. */
export const nameUpTo = (max: number): fc.Arbitrary<string> =>
  fc.oneof(
    anyName.filter((s) => s.length <= max),
    anyName.map((s) => s.slice(0, max)),
  );

/** What the schema takes as a guid or version: a label value (a UUID mostly, CC sends UUIDs). */
export const labelValue = fc.oneof(
  { arbitrary: fc.uuid(), weight: 3 },
  { arbitrary: fc.stringMatching(LABEL_VALUE), weight: 2 },
  { arbitrary: fc.constantFrom('A', 'x'.repeat(63), 'a.b', 'A_b-C.d', '0'), weight: 1 },
);

export const dnsLabel = fc.oneof(
  fc.stringMatching(DNS_LABEL),
  fc.constantFrom('kube-system', 'default', 'cf-workloads', 'a', 'x'.repeat(63)),
);
