/**
 * Label and field selectors: the string syntax of `?labelSelector=` / `?fieldSelector=` and the
 * `LabelSelector` objects in workload specs. The parser follows apimachinery's `labels.Parse` token by
 * token, so that malformed selectors fail with the same messages as on a real cluster.
 */
import { errors } from './errors.js';
import type { LabelSelector } from './types.js';
import { formatBadValue, isQualifiedName, isValidLabelValue } from './validation.js';

export interface Requirement {
  key: string;
  operator: 'in' | 'notin' | 'exists' | 'doesnotexist' | '=' | '!=';
  values: string[];
}

export interface FieldRequirement {
  field: string;
  operator: '=' | '!=';
  value: string;
}

// ---------------------------------------------------------------------------------------------------------
// Label selector lexer

type Token =
  'error' | 'eos' | 'identifier' | '(' | ')' | ',' | '!' | '=' | '==' | '!=' | '>' | '<' | 'in' | 'notin';

interface Scanned {
  tok: Token;
  lit: string;
}

const string2token = new Map<string, Token>([
  [')', ')'],
  [',', ','],
  ['!', '!'],
  ['==', '=='],
  ['=', '='],
  ['>', '>'],
  ['in', 'in'],
  ['<', '<'],
  ['!=', '!='],
  ['notin', 'notin'],
  ['(', '('],
]);

/** apimachinery's `binaryOperators`, as listed in its "expected:" messages. */
const binaryOperators = ['in', 'notin', '=', '==', '!=', 'gt', 'lt'];

function isWhitespace(ch: string): boolean {
  return ch === ' ' || ch === '\t' || ch === '\r' || ch === '\n';
}

function isSpecialSymbol(ch: string): boolean {
  return '=!(),><'.includes(ch);
}

function lex(s: string): Scanned[] {
  const items: Scanned[] = [];
  let pos = 0;
  for (;;) {
    while (pos < s.length && isWhitespace(s.charAt(pos))) pos++;
    if (pos >= s.length) {
      items.push({ tok: 'eos', lit: '' });
      return items;
    }
    if (isSpecialSymbol(s.charAt(pos))) {
      // Longest run of special characters that still forms a known token (`!=` rather than `!`).
      let buffer = '';
      let last: Scanned | undefined;
      while (pos < s.length && isSpecialSymbol(s.charAt(pos))) {
        const candidate = buffer + s.charAt(pos);
        const tok = string2token.get(candidate);
        if (tok) {
          last = { tok, lit: candidate };
        } else if (last) {
          break;
        }
        buffer = candidate;
        pos++;
      }
      items.push(last ?? { tok: 'error', lit: `error expected: keyword found '${buffer}'` });
    } else {
      let buffer = '';
      while (pos < s.length && !isSpecialSymbol(s.charAt(pos)) && !isWhitespace(s.charAt(pos))) {
        buffer += s.charAt(pos);
        pos++;
      }
      const keyword = string2token.get(buffer);
      items.push({ tok: keyword ?? 'identifier', lit: buffer });
    }
  }
}

// ---------------------------------------------------------------------------------------------------------
// Label selector parser

/** A parse failure; `parse` adds apimachinery's `unable to parse requirement: ` prefix where it does. */
class SelectorSyntaxError extends Error {}

class Parser {
  private position = 0;
  constructor(private readonly items: Scanned[]) {}

  /** In a value position `in` and `notin` are plain identifiers (`x in (in)`). */
  private lookahead(values: boolean): Scanned {
    const item = this.items[this.position] ?? { tok: 'eos', lit: '' };
    return values && (item.tok === 'in' || item.tok === 'notin')
      ? { tok: 'identifier', lit: item.lit }
      : item;
  }

  private consume(values: boolean): Scanned {
    const item = this.lookahead(values);
    this.position++;
    return item;
  }

  parse(): Requirement[] {
    const reqs: Requirement[] = [];
    for (;;) {
      const { tok, lit } = this.lookahead(true);
      if (tok === 'identifier' || tok === '!') {
        try {
          reqs.push(this.parseRequirement());
        } catch (err) {
          if (err instanceof SelectorSyntaxError) {
            throw new SelectorSyntaxError(`unable to parse requirement: ${err.message}`);
          }
          throw err;
        }
        const next = this.consume(true);
        if (next.tok === 'eos') return reqs;
        if (next.tok !== ',')
          throw new SelectorSyntaxError(`found '${next.lit}', expected: ',' or 'end of string'`);
        const after = this.lookahead(true);
        if (after.tok !== 'identifier' && after.tok !== '!') {
          throw new SelectorSyntaxError(`found '${after.lit}', expected: identifier after ','`);
        }
      } else if (tok === 'eos') {
        return reqs;
      } else {
        throw new SelectorSyntaxError(`found '${lit}', expected: !, identifier, or 'end of string'`);
      }
    }
  }

  private parseRequirement(): Requirement {
    let { tok, lit } = this.consume(true);
    let notExists = false;
    if (tok === '!') {
      notExists = true;
      ({ tok, lit } = this.consume(true));
    }
    if (tok !== 'identifier') throw new SelectorSyntaxError(`found '${lit}', expected: identifier`);
    const key = lit;
    const keyErrs = isQualifiedName(key);
    if (keyErrs.length > 0) {
      // apimachinery validates with a nil field path, which prints as `<nil>`.
      throw new SelectorSyntaxError(`<nil>: Invalid value: ${formatBadValue(key)}: ${keyErrs.join('; ')}`);
    }
    // `!key` stands alone: whatever follows it is left for parse() to reject.
    if (notExists) return { key, operator: 'doesnotexist', values: [] };
    const next = this.lookahead(true).tok;
    if (next === 'eos' || next === ',') return { key, operator: 'exists', values: [] };
    const op = this.consume(false);
    let operator: Requirement['operator'];
    let values: string[];
    if (op.tok === 'in' || op.tok === 'notin') {
      operator = op.tok;
      values = this.parseValues();
    } else if (op.tok === '=' || op.tok === '==' || op.tok === '!=') {
      operator = op.tok === '!=' ? '!=' : '=';
      values = this.parseExactValue();
    } else if (op.tok === '>' || op.tok === '<') {
      // Requirement has no gt/lt operators; the simulator's callers never send them.
      throw new SelectorSyntaxError(
        `operator '${op.tok === '>' ? 'gt' : 'lt'}' is not supported by the simulator`,
      );
    } else {
      throw new SelectorSyntaxError(`found '${op.lit}', expected: ${binaryOperators.join(', ')}`);
    }
    const valueErrs = validateValues(key, values);
    if (valueErrs) throw new SelectorSyntaxError(valueErrs);
    return { key, operator, values };
  }

  private parseValues(): string[] {
    const open = this.consume(true);
    if (open.tok !== '(') throw new SelectorSyntaxError(`found '${open.lit}' expected: '('`);
    const { tok, lit } = this.lookahead(true);
    if (tok === 'identifier' || tok === ',') {
      const set = this.parseIdentifiersList();
      if (this.consume(true).tok !== ')') throw new SelectorSyntaxError(`found '${lit}', expected: ')'`);
      return set;
    }
    if (tok === ')') {
      this.consume(true);
      return [''];
    }
    throw new SelectorSyntaxError(`found '${lit}', expected: ',', ')' or identifier`);
  }

  /** A possibly empty, comma-separated list of possibly empty values; returned sorted and unique like a Go set. */
  private parseIdentifiersList(): string[] {
    const set = new Set<string>();
    for (;;) {
      const { tok, lit } = this.consume(true);
      if (tok === 'identifier') {
        set.add(lit);
        const next = this.lookahead(true);
        if (next.tok === ',') continue;
        if (next.tok === ')') return sortedUnique(set);
        throw new SelectorSyntaxError(`found '${next.lit}', expected: ',' or ')'`);
      } else if (tok === ',') {
        if (set.size === 0) set.add(''); // "(,"
        const next = this.lookahead(true).tok;
        if (next === ')') {
          set.add(''); // ",)"
          return sortedUnique(set);
        }
        if (next === ',') {
          this.consume(true);
          set.add(''); // ",,"
        }
      } else {
        throw new SelectorSyntaxError(`found '${lit}', expected: ',', or identifier`);
      }
    }
  }

  private parseExactValue(): string[] {
    const next = this.lookahead(true).tok;
    if (next === 'eos' || next === ',') return [''];
    const { tok, lit } = this.consume(true);
    if (tok === 'identifier') return [lit];
    throw new SelectorSyntaxError(`found '${lit}', expected: identifier`);
  }
}

function sortedUnique(values: Iterable<string>): string[] {
  return [...new Set(values)].sort(compareStrings);
}

/** Byte-wise order, as Go's sort.Strings. */
function compareStrings(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/** NewRequirement's value checks; returns the aggregated message or undefined. */
function validateValues(key: string, values: string[]): string | undefined {
  const errs: string[] = [];
  values.forEach((value, i) => {
    const msgs = isValidLabelValue(value);
    if (msgs.length > 0)
      errs.push(`values[${i}][${key}]: Invalid value: ${formatBadValue(value)}: ${msgs.join('; ')}`);
  });
  return aggregate(errs);
}

/** utilerrors.Aggregate's Error(): one message alone, several in brackets. */
function aggregate(errs: string[]): string | undefined {
  if (errs.length === 0) return undefined;
  if (errs.length === 1) return errs[0];
  return `[${errs.join(', ')}]`;
}

function byKey(a: Requirement, b: Requirement): number {
  return compareStrings(a.key, b.key);
}

/** Parses a `labelSelector` query string; an empty string selects everything. Errors are 400s. */
export function parseLabelSelector(s: string): Requirement[] {
  try {
    // Stable sort by key, as labels.Parse does, so that String() output is deterministic.
    return new Parser(lex(s)).parse().sort(byKey);
  } catch (err) {
    if (err instanceof SelectorSyntaxError) throw errors.badRequest(err.message);
    throw err;
  }
}

export function matchesRequirements(
  labels: Record<string, string> | undefined,
  reqs: Requirement[],
): boolean {
  return reqs.every((req) => {
    const has = labels !== undefined && Object.hasOwn(labels, req.key);
    const value = has ? labels[req.key] : undefined;
    switch (req.operator) {
      case 'in':
      case '=':
        return has && req.values.includes(value ?? '');
      case 'notin':
      case '!=':
        // Objects without the key match negative requirements.
        return !has || !req.values.includes(value ?? '');
      case 'exists':
        return has;
      case 'doesnotexist':
        return !has;
    }
  });
}

const expressionOperators = {
  In: 'in',
  NotIn: 'notin',
  Exists: 'exists',
  DoesNotExist: 'doesnotexist',
} as const;

/**
 * metav1.LabelSelectorAsSelector: matchLabels become `=`, matchExpressions map one to one. The first invalid
 * requirement fails the whole selector with a 400, worded like NewRequirement's errors.
 */
export function labelSelectorToRequirements(sel: LabelSelector): Requirement[] {
  const reqs: Requirement[] = [];
  const add = (key: string, operator: Requirement['operator'], values: string[]) => {
    const errs: string[] = [];
    const keyErrs = isQualifiedName(key);
    if (keyErrs.length > 0) errs.push(`key: Invalid value: ${formatBadValue(key)}: ${keyErrs.join('; ')}`);
    if ((operator === 'in' || operator === 'notin') && values.length === 0) {
      // Go marshals the empty (nil) values slice as null.
      errs.push(`values: Invalid value: null: for 'in', 'notin' operators, values set can't be empty`);
    }
    if ((operator === 'exists' || operator === 'doesnotexist') && values.length !== 0) {
      errs.push(
        `values: Invalid value: ${JSON.stringify(values)}: values set must be empty for exists and does not exist`,
      );
    }
    const valueErrs = validateValues(key, values);
    if (valueErrs) errs.push(valueErrs);
    const message = aggregate(errs);
    if (message) throw errors.badRequest(message);
    // Sorted and unique like the parser's sets, so both forms compare equal.
    reqs.push({ key, operator, values: sortedUnique(values) });
  };

  for (const [key, value] of Object.entries(sel.matchLabels ?? {})) add(key, '=', [value]);
  for (const expr of sel.matchExpressions ?? []) {
    // The type says the operator is valid, but specs arrive from the wire unchecked.
    const raw: unknown = expr.operator;
    if (typeof raw !== 'string' || !Object.hasOwn(expressionOperators, raw)) {
      throw errors.badRequest(`${formatBadValue(raw)} is not a valid label selector operator`);
    }
    add(expr.key, expressionOperators[raw as keyof typeof expressionOperators], expr.values ?? []);
  }
  return reqs.sort(byKey);
}

/** `undefined` (no selector) selects nothing; `{}` selects everything, as with metav1.LabelSelectorAsSelector. */
export function matchesLabelSelector(
  labels: Record<string, string> | undefined,
  sel: LabelSelector | undefined,
): boolean {
  if (sel === undefined) return false;
  return matchesRequirements(labels, labelSelectorToRequirements(sel));
}

/** Requirement.String(): `!k`, `k`, `k=v`, `k!=v`, `k in (a,b)`, `k notin (a,b)`. */
export function requirementToString(req: Requirement): string {
  const values = [...req.values].sort(compareStrings).join(',');
  switch (req.operator) {
    case 'exists':
      return req.key;
    case 'doesnotexist':
      return `!${req.key}`;
    case '=':
      return `${req.key}=${values}`;
    case '!=':
      return `${req.key}!=${values}`;
    case 'in':
      return `${req.key} in (${values})`;
    case 'notin':
      return `${req.key} notin (${values})`;
  }
}

/** The string form a Scale's `status.selector` carries, sorted by key like apimachinery. */
export function labelSelectorToString(sel: LabelSelector): string {
  return labelSelectorToRequirements(sel).map(requirementToString).join(',');
}

// ---------------------------------------------------------------------------------------------------------
// Field selectors (apimachinery `fields.ParseSelector`)

/** Splits on commas that are not backslash-escaped; the escapes stay in the terms. */
function splitTerms(s: string): string[] {
  if (s.length === 0) return [];
  const terms: string[] = [];
  let start = 0;
  let inSlash = false;
  for (let i = 0; i < s.length; i++) {
    const c = s.charAt(i);
    if (inSlash) inSlash = false;
    else if (c === '\\') inSlash = true;
    else if (c === ',') {
      terms.push(s.slice(start, i));
      start = i + 1;
    }
  }
  terms.push(s.slice(start));
  return terms;
}

/** The first operator wins, scanning left to right; `!=` and `==` are tried before `=`. */
function splitTerm(term: string): { lhs: string; op: '=' | '==' | '!='; rhs: string } | undefined {
  for (let i = 0; i < term.length; i++) {
    for (const op of ['!=', '==', '='] as const) {
      if (term.startsWith(op, i)) return { lhs: term.slice(0, i), op, rhs: term.slice(i + op.length) };
    }
  }
  return undefined;
}

function unescapeValue(s: string): string {
  if (!/[\\,=]/.test(s)) return s;
  let out = '';
  let inSlash = false;
  for (const c of s) {
    if (inSlash) {
      if (c !== '\\' && c !== ',' && c !== '=') {
        throw errors.badRequest(`invalid field selector: invalid escape sequence: \\${c}`);
      }
      out += c;
      inSlash = false;
    } else if (c === '\\') {
      inSlash = true;
    } else if (c === ',' || c === '=') {
      // Go prints the rune with %v, i.e. as its code point.
      throw errors.badRequest(
        `invalid field selector: unescaped character in value: ${c.codePointAt(0) ?? 0}`,
      );
    } else {
      out += c;
    }
  }
  if (inSlash) throw errors.badRequest('invalid field selector: invalid escape sequence: \\');
  return out;
}

/**
 * Parses a `fieldSelector` query string. Like apimachinery, terms are not trimmed, sorted, and values may
 * escape `\`, `,` and `=` with a backslash. Whether a field is supported is the caller's business.
 */
export function parseFieldSelector(s: string): FieldRequirement[] {
  const reqs: FieldRequirement[] = [];
  for (const part of splitTerms(s).sort(compareStrings)) {
    if (part === '') continue;
    const term = splitTerm(part);
    if (!term) throw errors.badRequest(`invalid selector: '${s}'; can't understand '${part}'`);
    reqs.push({ field: term.lhs, operator: term.op === '!=' ? '!=' : '=', value: unescapeValue(term.rhs) });
  }
  return reqs;
}

/** A field that `get` cannot find counts as the empty string, as in apimachinery's `fields.Set`. */
export function matchesFieldSelector(
  get: (field: string) => string | undefined,
  reqs: FieldRequirement[],
): boolean {
  return reqs.every((req) => {
    const value = get(req.field) ?? '';
    return req.operator === '=' ? value === req.value : value !== req.value;
  });
}
