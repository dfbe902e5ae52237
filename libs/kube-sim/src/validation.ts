/**
 * Name, label and annotation validation, worded like apimachinery's `pkg/util/validation` and
 * `pkg/api/validation` so that 422 bodies read like a real apiserver's.
 */
import type { StatusCause } from './errors.js';
import { fieldCause } from './errors.js';
import { isRecord } from './types.js';

const dns1123LabelFmt = '[a-z0-9]([-a-z0-9]*[a-z0-9])?';
const dns1123LabelErrMsg =
  "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character";
const dns1123LabelMaxLength = 63;
const dns1123LabelRegexp = new RegExp(`^${dns1123LabelFmt}$`);

const dns1123SubdomainFmt = `${dns1123LabelFmt}(\\.${dns1123LabelFmt})*`;
const dns1123SubdomainErrMsg =
  "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character";
const dns1123SubdomainMaxLength = 253;
const dns1123SubdomainRegexp = new RegExp(`^${dns1123SubdomainFmt}$`);

const qualifiedNameFmt = '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]';
const qualifiedNameErrMsg =
  "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character";
const qualifiedNameMaxLength = 63;
const qualifiedNameRegexp = new RegExp(`^${qualifiedNameFmt}$`);

const labelValueFmt = `(${qualifiedNameFmt})?`;
const labelValueErrMsg =
  "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character";
const labelValueMaxLength = 63;
const labelValueRegexp = new RegExp(`^${labelValueFmt}$`);

const envVarNameFmt = '[-._a-zA-Z][-._a-zA-Z0-9]*';
const envVarNameFmtErrMsg =
  "a valid environment variable name must consist of alphabetic characters, digits, '_', '-', or '.', and must not start with a digit";
const envVarNameRegexp = new RegExp(`^${envVarNameFmt}$`);
const relaxedEnvVarNameFmtErrMsg =
  "a valid environment variable name must consist only of printable ASCII characters other than '='";
/** Printable ASCII (space to '~') but '='. */
const relaxedEnvVarNameRegexp = /^[\x20-\x3c\x3e-\x7e]+$/;

/**
 * The first minor version whose API server takes any printable ASCII env var name but '=': the
 * RelaxedEnvironmentVariableValidation gate, alpha (off) in 1.30, beta and on by default from 1.32, GA
 * and locked on from 1.34 (KEP-4369).
 */
export const RELAXED_ENV_VAR_NAMES_SINCE = 32;

/** apimachinery `TotalAnnotationSizeLimitB`. */
export const totalAnnotationSizeLimitBytes = 256 * 1024;

/** Go's `len()` counts bytes, not UTF-16 units. */
function byteLength(s: string): number {
  return Buffer.byteLength(s, 'utf8');
}

export function maxLenError(length: number): string {
  return `must be no more than ${length} characters`;
}

/** apimachinery `RegexError`, including its `',  or '` double space between examples. */
export function regexError(msg: string, fmt: string, ...examples: string[]): string {
  if (examples.length === 0) return `${msg} (regex used for validation is '${fmt}')`;
  let out = `${msg} (e.g. `;
  examples.forEach((example, i) => {
    if (i > 0) out += ' or ';
    out += `'${example}', `;
  });
  return `${out}regex used for validation is '${fmt}')`;
}

export function isDns1123Label(value: string): string[] {
  const errs: string[] = [];
  if (byteLength(value) > dns1123LabelMaxLength) errs.push(maxLenError(dns1123LabelMaxLength));
  if (!dns1123LabelRegexp.test(value))
    errs.push(regexError(dns1123LabelErrMsg, dns1123LabelFmt, 'my-name', '123-abc'));
  return errs;
}

export function isDns1123Subdomain(value: string): string[] {
  const errs: string[] = [];
  if (byteLength(value) > dns1123SubdomainMaxLength) errs.push(maxLenError(dns1123SubdomainMaxLength));
  if (!dns1123SubdomainRegexp.test(value)) {
    errs.push(regexError(dns1123SubdomainErrMsg, dns1123SubdomainFmt, 'example.com'));
  }
  return errs;
}

/**
 * An env var name as the API server of 1.`minor` checks it: apimachinery `IsEnvVarName` (with its
 * `hasChDirPrefix`) before the relaxed rule, `IsRelaxedEnvVarName` from it. An empty name is the
 * caller's Required.
 */
export function isEnvVarName(value: string, minor: number): string[] {
  if (minor >= RELAXED_ENV_VAR_NAMES_SINCE) {
    return relaxedEnvVarNameRegexp.test(value) ? [] : [relaxedEnvVarNameFmtErrMsg];
  }
  const errs: string[] = [];
  if (!envVarNameRegexp.test(value)) {
    errs.push(regexError(envVarNameFmtErrMsg, envVarNameFmt, 'my.env-name', 'MY_ENV.NAME', 'MyEnvName1'));
  }
  if (value === '.') errs.push("must not be '.'");
  else if (value === '..') errs.push("must not be '..'");
  else if (value.startsWith('..')) errs.push("must not start with '..'");
  return errs;
}

/** Label and annotation keys: `[prefix/]name`. */
export function isQualifiedName(value: string): string[] {
  const errs: string[] = [];
  const parts = value.split('/');
  let name: string;
  if (parts.length === 1) {
    name = value;
  } else if (parts.length === 2) {
    const prefix = parts[0] ?? '';
    name = parts[1] ?? '';
    if (prefix.length === 0) errs.push('prefix part must be non-empty');
    else errs.push(...isDns1123Subdomain(prefix).map((m) => `prefix part ${m}`));
  } else {
    return [
      `a qualified name ${regexError(qualifiedNameErrMsg, qualifiedNameFmt, 'MyName', 'my.name', '123-abc')} with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')`,
    ];
  }
  if (name.length === 0) errs.push('name part must be non-empty');
  else if (byteLength(name) > qualifiedNameMaxLength)
    errs.push(`name part ${maxLenError(qualifiedNameMaxLength)}`);
  if (!qualifiedNameRegexp.test(name)) {
    errs.push(
      `name part ${regexError(qualifiedNameErrMsg, qualifiedNameFmt, 'MyName', 'my.name', '123-abc')}`,
    );
  }
  return errs;
}

export function isValidLabelValue(value: string): string[] {
  const errs: string[] = [];
  if (byteLength(value) > labelValueMaxLength) errs.push(maxLenError(labelValueMaxLength));
  if (!labelValueRegexp.test(value)) {
    errs.push(regexError(labelValueErrMsg, labelValueFmt, 'MyValue', 'my_value', '12345'));
  }
  return errs;
}

/** How field.Error.ErrorBody prints a bad value: strings quoted, scalars bare, the rest as JSON. */
export function formatBadValue(value: unknown): string {
  if (typeof value === 'string') return JSON.stringify(value);
  if (typeof value === 'number' || typeof value === 'boolean') return String(value);
  return JSON.stringify(value) ?? String(value);
}

/** A `field.Invalid` cause; the message is the ErrorBody (`Invalid value: "x": detail`), as the apiserver sends it. */
export function invalidCause(field: string, value: unknown, detail: string): StatusCause {
  return fieldCause('FieldValueInvalid', field, `Invalid value: ${formatBadValue(value)}: ${detail}`);
}

/** A `field.Required` cause. */
export function requiredCause(field: string, detail: string): StatusCause {
  return fieldCause('FieldValueRequired', field, detail ? `Required value: ${detail}` : 'Required value');
}

/**
 * apimachinery `maskTrailingDash`: a generateName prefix may end in '-' because a suffix follows.
 * (It really does drop two characters before appending 'a'.)
 */
function maskTrailingDash(name: string): string {
  return name.length > 1 && name.endsWith('-') ? `${name.slice(0, -2)}a` : name;
}

/** Checks that `value` is a `map[string]string`; returns causes, or the typed map when it is one. */
function stringMap(value: unknown, field: string): { causes: StatusCause[]; map?: Record<string, string> } {
  if (value === undefined || value === null) return { causes: [], map: {} };
  if (!isRecord(value)) {
    return { causes: [invalidCause(field, value, 'must be a map of string keys to string values')] };
  }
  const causes: StatusCause[] = [];
  for (const [k, v] of Object.entries(value)) {
    if (typeof v !== 'string') causes.push(invalidCause(`${field}[${k}]`, v, 'must be a string'));
  }
  return causes.length > 0 ? { causes } : { causes, map: value as Record<string, string> };
}

/**
 * apimachinery `ValidateObjectMeta` for the fields the simulator stores. `nameRule` picks
 * `NameIsDNSSubdomain` (most kinds) or `NameIsDNSLabel` (e.g. namespaces, services).
 */
export function validateObjectMeta(
  meta: { name?: string; generateName?: string; labels?: unknown; annotations?: unknown },
  nameRule: 'subdomain' | 'label',
): StatusCause[] {
  const nameFn = nameRule === 'label' ? isDns1123Label : isDns1123Subdomain;
  const causes: StatusCause[] = [];

  if (meta.generateName) {
    for (const msg of nameFn(maskTrailingDash(meta.generateName))) {
      causes.push(invalidCause('metadata.generateName', meta.generateName, msg));
    }
  }
  if (meta.name) {
    for (const msg of nameFn(meta.name)) causes.push(invalidCause('metadata.name', meta.name, msg));
  } else if (!meta.generateName) {
    causes.push(requiredCause('metadata.name', 'name or generateName is required'));
  }

  const labels = stringMap(meta.labels, 'metadata.labels');
  causes.push(...labels.causes);
  for (const [k, v] of Object.entries(labels.map ?? {})) {
    for (const msg of isQualifiedName(k)) causes.push(invalidCause('metadata.labels', k, msg));
    for (const msg of isValidLabelValue(v)) causes.push(invalidCause('metadata.labels', v, msg));
  }

  const annotations = stringMap(meta.annotations, 'metadata.annotations');
  causes.push(...annotations.causes);
  if (annotations.map) {
    let total = 0;
    for (const [k, v] of Object.entries(annotations.map)) {
      // Annotation keys are case-insensitive qualified names.
      for (const msg of isQualifiedName(k.toLowerCase()))
        causes.push(invalidCause('metadata.annotations', k, msg));
      total += byteLength(k) + byteLength(v);
    }
    if (total > totalAnnotationSizeLimitBytes) {
      // Pre-1.32 field.TooLong wording, which is what the brief and older servers use.
      causes.push(
        fieldCause(
          'FieldValueTooLong',
          'metadata.annotations',
          `Too long: must have at most ${totalAnnotationSizeLimitBytes} bytes`,
        ),
      );
    }
  }
  return causes;
}

/** apimachinery `util/rand` alphabet: no vowels (no accidental words) and no look-alike characters. */
const nameSuffixAlphabet = 'bcdfghjklmnpqrstvwxz2456789';
const nameSuffixLength = 5;
const maxNameLength = 63;

export function generateNameSuffix(random: () => number): string {
  let out = '';
  for (let i = 0; i < nameSuffixLength; i++) {
    // Clamp so that a `random` returning exactly 1 cannot index past the end.
    const index = Math.min(nameSuffixAlphabet.length - 1, Math.floor(random() * nameSuffixAlphabet.length));
    out += nameSuffixAlphabet.charAt(Math.max(0, index));
  }
  return out;
}

/** apimachinery `SimpleNameGenerator`: the prefix is cut to 58 characters so the name fits in 63. */
export function generatedName(prefix: string, random: () => number): string {
  return prefix.slice(0, maxNameLength - nameSuffixLength) + generateNameSuffix(random);
}
