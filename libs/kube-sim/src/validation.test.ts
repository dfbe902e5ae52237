import { describe, expect, it } from '@jest/globals';
import type { StatusCause } from './errors.js';
import {
  generatedName,
  generateNameSuffix,
  isDns1123Label,
  isDns1123Subdomain,
  isEnvVarName,
  isQualifiedName,
  isValidLabelValue,
  validateObjectMeta,
} from './validation.js';

const subdomainMsg =
  "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')";
const labelMsg =
  "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')";
const qualifiedMsg =
  "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')";
const labelValueMsg =
  "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')";

describe('isDns1123Subdomain', () => {
  it.each<[string, string[]]>([
    ['example.com', []],
    ['web-1', []],
    ['a', []],
    ['1.2.3', []],
    ['a'.repeat(253), []],
    ['a'.repeat(254), ['must be no more than 253 characters']],
    ['A'.repeat(254), ['must be no more than 253 characters', subdomainMsg]],
    ['Example.com', [subdomainMsg]],
    ['-web', [subdomainMsg]],
    ['web-', [subdomainMsg]],
    ['web..x', [subdomainMsg]],
    ['web_1', [subdomainMsg]],
    ['', [subdomainMsg]],
    ['web\n', [subdomainMsg]],
  ])('%j → %j', (value, expected) => {
    expect(isDns1123Subdomain(value)).toEqual(expected);
  });
});

describe('isDns1123Label', () => {
  it.each<[string, string[]]>([
    ['web-1', []],
    ['a'.repeat(63), []],
    ['a'.repeat(64), ['must be no more than 63 characters']],
    ['web.x', [labelMsg]],
    ['Web', [labelMsg]],
    ['', [labelMsg]],
  ])('%j → %j', (value, expected) => {
    expect(isDns1123Label(value)).toEqual(expected);
  });
});

describe('isQualifiedName', () => {
  it.each<[string, string[]]>([
    ['app', []],
    ['App_Name.v1', []],
    ['example.com/app', []],
    ['app.kubernetes.io/name', []],
    ['a'.repeat(63), []],
    ['a'.repeat(64), ['name part must be no more than 63 characters']],
    ['', ['name part must be non-empty', `name part ${qualifiedMsg}`]],
    ['-app', [`name part ${qualifiedMsg}`]],
    ['app:x', [`name part ${qualifiedMsg}`]],
    ['/app', ['prefix part must be non-empty']],
    ['example.com/', ['name part must be non-empty', `name part ${qualifiedMsg}`]],
    ['Example.com/app', [`prefix part ${subdomainMsg}`]],
    [`${'a'.repeat(254)}/app`, ['prefix part must be no more than 253 characters']],
    [
      'a/b/c',
      [
        `a qualified name ${qualifiedMsg} with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')`,
      ],
    ],
  ])('%j → %j', (value, expected) => {
    expect(isQualifiedName(value)).toEqual(expected);
  });
});

describe('isValidLabelValue', () => {
  it.each<[string, string[]]>([
    ['', []],
    ['web', []],
    ['My_value-1.0', []],
    ['a'.repeat(63), []],
    ['a'.repeat(64), ['must be no more than 63 characters']],
    ['-web', [labelValueMsg]],
    ['web app', [labelValueMsg]],
    ['a/b', [labelValueMsg]],
  ])('%j → %j', (value, expected) => {
    expect(isValidLabelValue(value)).toEqual(expected);
  });
});

describe('validateObjectMeta', () => {
  type Meta = Parameters<typeof validateObjectMeta>[0];
  const bigAnnotations = { 'a/b': 'x'.repeat(262144 - 3 + 1) };
  const exactAnnotations = { 'a/b': 'x'.repeat(262144 - 3) };

  it.each<[string, Meta, 'subdomain' | 'label', StatusCause[]]>([
    [
      'a valid object',
      {
        name: 'web.v1',
        labels: { app: 'web', empty: '' },
        annotations: { 'Example.com/Note': 'free text ✓' },
      },
      'subdomain',
      [],
    ],
    ['generateName alone', { generateName: 'web-' }, 'subdomain', []],
    ['generateName alone, label rule', { generateName: 'web-' }, 'label', []],
    [
      'no name',
      {},
      'subdomain',
      [
        {
          reason: 'FieldValueRequired',
          field: 'metadata.name',
          message: 'Required value: name or generateName is required',
        },
      ],
    ],
    [
      'empty name',
      { name: '' },
      'subdomain',
      [
        {
          reason: 'FieldValueRequired',
          field: 'metadata.name',
          message: 'Required value: name or generateName is required',
        },
      ],
    ],
    [
      'bad name',
      { name: 'Web' },
      'subdomain',
      [
        {
          reason: 'FieldValueInvalid',
          field: 'metadata.name',
          message: `Invalid value: "Web": ${subdomainMsg}`,
        },
      ],
    ],
    [
      'dotted name under the label rule',
      { name: 'web.v1' },
      'label',
      [
        {
          reason: 'FieldValueInvalid',
          field: 'metadata.name',
          message: `Invalid value: "web.v1": ${labelMsg}`,
        },
      ],
    ],
    [
      'bad generateName',
      { generateName: 'Web-' },
      'subdomain',
      [
        {
          reason: 'FieldValueInvalid',
          field: 'metadata.generateName',
          message: `Invalid value: "Web-": ${subdomainMsg}`,
        },
      ],
    ],
    [
      'bad label key and value',
      { name: 'x', labels: { 'a b': 'ok', good: '-bad' } },
      'subdomain',
      [
        {
          reason: 'FieldValueInvalid',
          field: 'metadata.labels',
          message: `Invalid value: "a b": name part ${qualifiedMsg}`,
        },
        {
          reason: 'FieldValueInvalid',
          field: 'metadata.labels',
          message: `Invalid value: "-bad": ${labelValueMsg}`,
        },
      ],
    ],
    [
      'label value too long',
      { name: 'x', labels: { app: 'a'.repeat(64) } },
      'subdomain',
      [
        {
          reason: 'FieldValueInvalid',
          field: 'metadata.labels',
          message: `Invalid value: "${'a'.repeat(64)}": must be no more than 63 characters`,
        },
      ],
    ],
    [
      'labels not a map',
      { name: 'x', labels: ['a'] },
      'subdomain',
      [
        {
          reason: 'FieldValueInvalid',
          field: 'metadata.labels',
          message: 'Invalid value: ["a"]: must be a map of string keys to string values',
        },
      ],
    ],
    [
      'a non-string annotation value',
      { name: 'x', annotations: { a: 1 } },
      'subdomain',
      [
        {
          reason: 'FieldValueInvalid',
          field: 'metadata.annotations[a]',
          message: 'Invalid value: 1: must be a string',
        },
      ],
    ],
    [
      'bad annotation key',
      { name: 'x', annotations: { 'a/b/c': 'x' } },
      'subdomain',
      [
        {
          reason: 'FieldValueInvalid',
          field: 'metadata.annotations',
          message: `Invalid value: "a/b/c": a qualified name ${qualifiedMsg} with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')`,
        },
      ],
    ],
    ['annotations at the size limit', { name: 'x', annotations: exactAnnotations }, 'subdomain', []],
    [
      'annotations over the size limit',
      { name: 'x', annotations: bigAnnotations },
      'subdomain',
      [
        {
          reason: 'FieldValueTooLong',
          field: 'metadata.annotations',
          message: 'Too long: must have at most 262144 bytes',
        },
      ],
    ],
    ['null labels and annotations', { name: 'x', labels: null, annotations: null }, 'subdomain', []],
  ])('%s', (_name, meta, rule, expected) => {
    expect(validateObjectMeta(meta, rule)).toEqual(expected);
  });
});

describe('generated names', () => {
  const sequence = (values: number[]) => {
    let i = 0;
    return () => values[i++ % values.length] ?? 0;
  };

  it.each<[string, () => number, string]>([
    ['lowest', () => 0, 'bbbbb'],
    ['highest', () => 0.9999, '99999'],
    ['1 is clamped', () => 1, '99999'],
    ['walks the alphabet', sequence([0, 1 / 27, 2 / 27, 3 / 27, 26 / 27]), 'bcdf9'],
  ])('generateNameSuffix: %s', (_name, random, expected) => {
    expect(generateNameSuffix(random)).toBe(expected);
  });

  it('only uses the apimachinery alphabet', () => {
    const suffix = generateNameSuffix(Math.random);
    expect(suffix).toMatch(/^[bcdfghjklmnpqrstvwxz2456789]{5}$/);
  });

  it.each<[string, string]>([
    ['web-', 'web-bbbbb'],
    ['', 'bbbbb'],
    ['x'.repeat(58), `${'x'.repeat(58)}bbbbb`],
    ['x'.repeat(70), `${'x'.repeat(58)}bbbbb`],
  ])('generatedName(%j)', (prefix, expected) => {
    const name = generatedName(prefix, () => 0);
    expect(name).toBe(expected);
    expect(name.length).toBeLessThanOrEqual(63);
  });
});

describe('isEnvVarName', () => {
  const strict =
    "a valid environment variable name must consist of alphabetic characters, digits, '_', '-', or '.', and must not start with a digit (e.g. 'my.env-name',  or 'MY_ENV.NAME',  or 'MyEnvName1', regex used for validation is '[-._a-zA-Z][-._a-zA-Z0-9]*')";
  const relaxed =
    "a valid environment variable name must consist only of printable ASCII characters other than '='";
  it.each<[string, number, string[]]>([
    ['MY_VAR', 30, []],
    ['my.env-name', 30, []],
    ['MY VAR', 30, [strict]],
    ['1ABC', 31, [strict]],
    ['..x', 30, ["must not start with '..'"]],
    ['.', 30, ["must not be '.'"]],
    ['MY VAR', 32, []],
    ['Logging:Level', 34, []],
    ['1ABC', 34, []],
    ['A=B', 34, [relaxed]],
    ['ünï', 34, [relaxed]],
    ['TAB\there', 35, [relaxed]],
  ])('%p on 1.%d', (name, minor, errs) => {
    expect(isEnvVarName(name, minor)).toEqual(errs);
  });
});
