import { describe, expect, it } from '@jest/globals';
import { StatusError } from './errors.js';
import type { FieldRequirement, Requirement } from './selectors.js';
import {
  labelSelectorToRequirements,
  labelSelectorToString,
  matchesFieldSelector,
  matchesLabelSelector,
  matchesRequirements,
  parseFieldSelector,
  parseLabelSelector,
} from './selectors.js';
import type { LabelSelector } from './types.js';

function thrown(fn: () => unknown): StatusError {
  try {
    fn();
  } catch (err) {
    if (err instanceof StatusError) return err;
    throw err;
  }
  throw new Error('expected a StatusError');
}

const qualifiedNameRegexMsg =
  "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')";
const labelValueRegexMsg =
  "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')";

describe('parseLabelSelector', () => {
  const req = (key: string, operator: Requirement['operator'], values: string[] = []): Requirement => ({
    key,
    operator,
    values,
  });

  it.each<[string, Requirement[]]>([
    ['', []],
    ['   ', []],
    ['app=web', [req('app', '=', ['web'])]],
    ['app==web', [req('app', '=', ['web'])]],
    ['app!=web', [req('app', '!=', ['web'])]],
    ['app=', [req('app', '=', [''])]],
    ['tier in (b,a)', [req('tier', 'in', ['a', 'b'])]],
    ['tier notin (a)', [req('tier', 'notin', ['a'])]],
    ['tier in ()', [req('tier', 'in', [''])]],
    ['tier in (a,,b,a)', [req('tier', 'in', ['', 'a', 'b'])]],
    ['x in (in,notin)', [req('x', 'in', ['in', 'notin'])]],
    ['app', [req('app', 'exists')]],
    ['!app', [req('app', 'doesnotexist')]],
    ['example.com/name=x', [req('example.com/name', '=', ['x'])]],
    ['app.kubernetes.io/name in (web)', [req('app.kubernetes.io/name', 'in', ['web'])]],
    [
      '  app = web ,\ttier in ( a , b ) , !legacy ',
      [req('app', '=', ['web']), req('legacy', 'doesnotexist'), req('tier', 'in', ['a', 'b'])],
    ],
    ['b=1,a=2,c', [req('a', '=', ['2']), req('b', '=', ['1']), req('c', 'exists')]],
  ])('parses %j', (input, expected) => {
    expect(parseLabelSelector(input)).toEqual(expected);
  });

  it.each<[string, string]>([
    ['app=web,', "found '', expected: identifier after ','"],
    [',', "found ',', expected: !, identifier, or 'end of string'"],
    ['=web', "found '=', expected: !, identifier, or 'end of string'"],
    ['!a=b', "found '=', expected: ',' or 'end of string'"],
    ['a=b=c', "found '=', expected: ',' or 'end of string'"],
    ['a=b c', "found 'c', expected: ',' or 'end of string'"],
    ['a b', "unable to parse requirement: found 'b', expected: in, notin, =, ==, !=, gt, lt"],
    ['x in a', "unable to parse requirement: found 'a' expected: '('"],
    ['x notin', "unable to parse requirement: found '' expected: '('"],
    ['x in (a', "unable to parse requirement: found '', expected: ',' or ')'"],
    ['x in (=)', "unable to parse requirement: found '=', expected: ',', ')' or identifier"],
    ['a=(b)', "unable to parse requirement: found '(', expected: identifier"],
    [
      'app:monolith',
      `unable to parse requirement: <nil>: Invalid value: "app:monolith": name part ${qualifiedNameRegexMsg}`,
    ],
    [
      'a/b/c=x',
      `unable to parse requirement: <nil>: Invalid value: "a/b/c": a qualified name ${qualifiedNameRegexMsg} with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')`,
    ],
    ['a=b%c', `unable to parse requirement: values[0][a]: Invalid value: "b%c": ${labelValueRegexMsg}`],
    ['a>1', "unable to parse requirement: operator 'gt' is not supported by the simulator"],
  ])('rejects %j with a 400', (input, message) => {
    const err = thrown(() => parseLabelSelector(input));
    expect({ code: err.code, reason: err.reason, message: err.message }).toEqual({
      code: 400,
      reason: 'BadRequest',
      message,
    });
  });
});

describe('matchesRequirements', () => {
  it.each<[string, Record<string, string> | undefined, boolean]>([
    ['', undefined, true],
    ['', { a: '1' }, true],
    ['app=web', { app: 'web' }, true],
    ['app=web', { app: 'api' }, false],
    ['app=web', undefined, false],
    ['app!=web', { app: 'api' }, true],
    ['app!=web', { app: 'web' }, false],
    ['app!=web', {}, true],
    ['app!=web', undefined, true],
    ['tier in (a,b)', { tier: 'b' }, true],
    ['tier in (a,b)', { tier: 'c' }, false],
    ['tier in (a,b)', {}, false],
    ['tier notin (a,b)', { tier: 'c' }, true],
    ['tier notin (a,b)', { tier: 'a' }, false],
    ['tier notin (a,b)', {}, true],
    ['app', { app: '' }, true],
    ['app', {}, false],
    ['!app', {}, true],
    ['!app', { app: 'x' }, false],
    ['app=', { app: '' }, true],
    ['app=', {}, false],
    ['app=web,tier in (a)', { app: 'web', tier: 'a' }, true],
    ['app=web,tier in (a)', { app: 'web', tier: 'b' }, false],
    ['toString', {}, false],
  ])('%j against %j → %s', (selector, labels, expected) => {
    expect(matchesRequirements(labels, parseLabelSelector(selector))).toBe(expected);
  });
});

describe('LabelSelector objects', () => {
  it.each<[string, LabelSelector, string]>([
    ['empty', {}, ''],
    ['matchLabels', { matchLabels: { app: 'web' } }, 'app=web'],
    [
      'labels and In, sorted by key and value',
      {
        matchLabels: { tier: 'x', app: 'web' },
        matchExpressions: [{ key: 'env', operator: 'In', values: ['b', 'a'] }],
      },
      'app=web,env in (a,b),tier=x',
    ],
    [
      'NotIn, Exists, DoesNotExist',
      {
        matchExpressions: [
          { key: 'zone', operator: 'NotIn', values: ['z'] },
          { key: 'app', operator: 'Exists' },
          { key: 'legacy', operator: 'DoesNotExist', values: [] },
        ],
      },
      'app,!legacy,zone notin (z)',
    ],
  ])('labelSelectorToString: %s', (_name, sel, expected) => {
    expect(labelSelectorToString(sel)).toBe(expected);
    // The string form parses back to the same requirements.
    expect(parseLabelSelector(expected)).toEqual(labelSelectorToRequirements(sel));
  });

  it.each<[string, Record<string, string> | undefined, LabelSelector | undefined, boolean]>([
    ['undefined selector matches nothing', { app: 'web' }, undefined, false],
    ['empty selector matches everything', { app: 'web' }, {}, true],
    ['empty selector matches unlabelled', undefined, {}, true],
    ['matchLabels hit', { app: 'web', x: 'y' }, { matchLabels: { app: 'web' } }, true],
    ['matchLabels miss', { app: 'api' }, { matchLabels: { app: 'web' } }, false],
    [
      'In hit',
      { env: 'a' },
      { matchExpressions: [{ key: 'env', operator: 'In', values: ['a', 'b'] }] },
      true,
    ],
    ['NotIn without key', {}, { matchExpressions: [{ key: 'env', operator: 'NotIn', values: ['a'] }] }, true],
    ['Exists miss', {}, { matchExpressions: [{ key: 'env', operator: 'Exists' }] }, false],
    [
      'DoesNotExist hit',
      { app: 'x' },
      { matchExpressions: [{ key: 'env', operator: 'DoesNotExist' }] },
      true,
    ],
    [
      'labels AND expressions',
      { app: 'web', env: 'c' },
      { matchLabels: { app: 'web' }, matchExpressions: [{ key: 'env', operator: 'In', values: ['a'] }] },
      false,
    ],
  ])('matchesLabelSelector: %s', (_name, labels, sel, expected) => {
    expect(matchesLabelSelector(labels, sel)).toBe(expected);
  });

  it.each<[string, LabelSelector, string]>([
    [
      'unknown operator',
      { matchExpressions: [{ key: 'a', operator: 'Equals' as 'In', values: ['x'] }] },
      '"Equals" is not a valid label selector operator',
    ],
    [
      'In without values',
      { matchExpressions: [{ key: 'a', operator: 'In' }] },
      "values: Invalid value: null: for 'in', 'notin' operators, values set can't be empty",
    ],
    [
      'Exists with values',
      { matchExpressions: [{ key: 'a', operator: 'Exists', values: ['x'] }] },
      'values: Invalid value: ["x"]: values set must be empty for exists and does not exist',
    ],
    [
      'bad label value',
      { matchLabels: { app: 'not ok' } },
      `values[0][app]: Invalid value: "not ok": ${labelValueRegexMsg}`,
    ],
    [
      'bad key',
      { matchLabels: { 'a b': 'x' } },
      `key: Invalid value: "a b": name part ${qualifiedNameRegexMsg}`,
    ],
  ])('labelSelectorToRequirements rejects %s with a 400', (_name, sel, message) => {
    const err = thrown(() => labelSelectorToRequirements(sel));
    expect({ code: err.code, reason: err.reason, message: err.message }).toEqual({
      code: 400,
      reason: 'BadRequest',
      message,
    });
  });
});

describe('field selectors', () => {
  const f = (field: string, operator: FieldRequirement['operator'], value: string): FieldRequirement => ({
    field,
    operator,
    value,
  });

  it.each<[string, FieldRequirement[]]>([
    ['', []],
    ['metadata.name=web', [f('metadata.name', '=', 'web')]],
    ['metadata.name==web', [f('metadata.name', '=', 'web')]],
    ['metadata.name!=web', [f('metadata.name', '!=', 'web')]],
    ['spec.nodeName=', [f('spec.nodeName', '=', '')]],
    // Terms come back sorted, as apimachinery sorts them.
    [
      'status.phase!=Running,spec.nodeName=n1',
      [f('spec.nodeName', '=', 'n1'), f('status.phase', '!=', 'Running')],
    ],
    ['metadata.name=web,,', [f('metadata.name', '=', 'web')]],
    ['metadata.name=a\\,b\\=c\\\\d', [f('metadata.name', '=', 'a,b=c\\d')]],
  ])('parses %j', (input, expected) => {
    expect(parseFieldSelector(input)).toEqual(expected);
  });

  it.each<[string, string]>([
    ['metadata.name', "invalid selector: 'metadata.name'; can't understand 'metadata.name'"],
    ['a=1,b', "invalid selector: 'a=1,b'; can't understand 'b'"],
    ['a=b\\x', 'invalid field selector: invalid escape sequence: \\x'],
    ['a=b\\', 'invalid field selector: invalid escape sequence: \\'],
    ['a=b=c', 'invalid field selector: unescaped character in value: 61'],
  ])('rejects %j with a 400', (input, message) => {
    const err = thrown(() => parseFieldSelector(input));
    expect({ code: err.code, reason: err.reason, message: err.message }).toEqual({
      code: 400,
      reason: 'BadRequest',
      message,
    });
  });

  const pod: Record<string, string> = { 'metadata.name': 'web-1', 'status.phase': 'Running' };
  it.each<[string, boolean]>([
    ['', true],
    ['metadata.name=web-1', true],
    ['metadata.name=web-2', false],
    ['metadata.name!=web-2', true],
    ['metadata.name=web-1,status.phase=Running', true],
    ['metadata.name=web-1,status.phase!=Running', false],
    // A field the object lacks reads as the empty string.
    ['spec.nodeName=', true],
    ['spec.nodeName!=', false],
    ['spec.nodeName=n1', false],
  ])('matchesFieldSelector %j → %s', (selector, expected) => {
    expect(matchesFieldSelector((field) => pod[field], parseFieldSelector(selector))).toBe(expected);
  });
});
