/**
 * Label and field selector matching for the fake, in the query-string syntax the API server takes:
 * `a=b`, `a==b`, `a!=b`, `a`, `!a`, `a in (x,y)`, `a notin (x,y)`, terms joined by commas. A malformed
 * selector is a 400, as on a real cluster, so worker tests catch bad selectors too.
 */
import { KubeApiError } from './errors.js';

type LabelTerm =
  | { key: string; op: '=' | '!='; value: string }
  | { key: string; op: 'in' | 'notin'; values: string[] }
  | { key: string; op: 'exists' | '!exists' };

function badRequest(message: string): KubeApiError {
  return new KubeApiError({ status: 400, reason: 'BadRequest', message, transient: false });
}

/** Splits on commas outside parentheses. */
function splitTerms(selector: string): string[] {
  const terms: string[] = [];
  let depth = 0;
  let start = 0;
  for (let i = 0; i < selector.length; i++) {
    const c = selector[i];
    if (c === '(') depth++;
    else if (c === ')') depth--;
    else if (c === ',' && depth === 0) {
      terms.push(selector.slice(start, i));
      start = i + 1;
    }
    if (depth < 0 || depth > 1) throw badRequest(`unable to parse requirement: unbalanced parentheses`);
  }
  if (depth !== 0) throw badRequest(`unable to parse requirement: unbalanced parentheses`);
  terms.push(selector.slice(start));
  return terms.map((t) => t.trim());
}

const KEY = /^([a-z0-9]([-a-z0-9.]*[a-z0-9])?\/)?[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$/;
const VALUE = /^([A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?)?$/;

function checkKey(key: string, selector: string): string {
  if (!KEY.test(key))
    throw badRequest(`unable to parse requirement: invalid label key "${key}" in "${selector}"`);
  return key;
}

function checkValue(value: string, selector: string): string {
  if (!VALUE.test(value)) {
    throw badRequest(`unable to parse requirement: invalid label value "${value}" in "${selector}"`);
  }
  return value;
}

export function parseLabelSelector(selector: string): LabelTerm[] {
  if (selector.trim() === '') return [];
  return splitTerms(selector).map((term): LabelTerm => {
    const set = /^(\S+)\s+(in|notin)\s*\(([^()]*)\)$/.exec(term);
    if (set) {
      const values = (set[3] ?? '').split(',').map((v) => checkValue(v.trim(), selector));
      return { key: checkKey(set[1] ?? '', selector), op: set[2] === 'in' ? 'in' : 'notin', values };
    }
    const eq = /^([^=!\s]+)\s*(==|=|!=)\s*(\S*)$/.exec(term);
    if (eq) {
      return {
        key: checkKey(eq[1] ?? '', selector),
        op: eq[2] === '!=' ? '!=' : '=',
        value: checkValue(eq[3] ?? '', selector),
      };
    }
    if (term.startsWith('!')) return { key: checkKey(term.slice(1).trim(), selector), op: '!exists' };
    return { key: checkKey(term, selector), op: 'exists' };
  });
}

export function matchesLabels(terms: LabelTerm[], labels: Record<string, string> | undefined): boolean {
  const l = labels ?? {};
  return terms.every((t) => {
    const has = Object.hasOwn(l, t.key);
    const v = l[t.key];
    switch (t.op) {
      case '=':
        return has && v === t.value;
      case '!=':
        return !has || v !== t.value;
      case 'in':
        return has && t.values.includes(v ?? '');
      case 'notin':
        return !has || !t.values.includes(v ?? '');
      case 'exists':
        return has;
      case '!exists':
        return !has;
    }
  });
}

interface FieldTerm {
  field: string;
  path: string;
  op: '=' | '!=';
  value: string;
}

/**
 * `field=value` / `field==value` / `field!=value` terms. `supported` maps each field the resource allows
 * to its dotted path in the object (they differ, e.g. an Event's `source` is `source.component`).
 */
export function parseFieldSelector(
  selector: string,
  supported: Readonly<Record<string, string>>,
): FieldTerm[] {
  if (selector.trim() === '') return [];
  return selector.split(',').map((term) => {
    const m = /^([^=!]+)(==|=|!=)(.*)$/.exec(term);
    if (!m) throw badRequest(`invalid selector: '${selector}'; can't understand '${term}'`);
    const field = m[1] ?? '';
    const path = supported[field];
    if (path === undefined) throw badRequest(`field label not supported: ${field}`);
    return { field, path, op: m[2] === '!=' ? '!=' : '=', value: m[3] ?? '' };
  });
}

function fieldValue(obj: unknown, path: string): string {
  let cur: unknown = obj;
  for (const part of path.split('.')) {
    cur = typeof cur === 'object' && cur !== null ? (cur as Record<string, unknown>)[part] : undefined;
  }
  // Missing fields count as the empty string, as in apimachinery's fields.Set.
  return typeof cur === 'string' || typeof cur === 'number' || typeof cur === 'boolean' ? String(cur) : '';
}

export function matchesFields(terms: FieldTerm[], obj: unknown): boolean {
  return terms.every((t) => (fieldValue(obj, t.path) === t.value) === (t.op === '='));
}
