/**
 * `/openapi/v2`, which `kubectl apply` and `kubectl create -f` (1.20) fetch to validate manifests (unknown
 * or mistyped fields are refused before anything is sent) and to compute strategic-merge patches. kubectl
 * asks only for gnostic's protobuf encoding (`application/com.github.proto-openapi.spec.v2@v1.0+protobuf`),
 * so that is what it gets; any other Accept gets the JSON document, as from a real server.
 *
 * The definitions are a real v1.20.2 server's (openapi-definitions.ts). To regenerate them, with a v1.20
 * cluster at hand: take `kubectl get --raw /openapi/v2`, keep the definitions whose
 * `x-kubernetes-group-version-kind` is a kind of resources.ts plus everything they `$ref`, drop
 * `description`s, and write them as one JSON string.
 */
import { DEFINITIONS_JSON } from './openapi-definitions.js';
import { type ResourceRegistry, apiVersionOf } from './resources.js';

type Schema = Record<string, unknown>;

const QUERY_PARAMS = [
  { uniqueItems: true, type: 'string', name: 'dryRun', in: 'query' },
  { uniqueItems: true, type: 'string', name: 'fieldManager', in: 'query' },
  { uniqueItems: true, type: 'boolean', name: 'force', in: 'query' },
];

/**
 * Paths carry only each kind's PATCH operation and its query parameters: kubectl's dry-run verifier
 * (`apply --dry-run=server`, `diff`) looks there for a `dryRun` parameter next to the kind's GVK.
 */
export function openApiDocument(version: string, registry: ResourceRegistry): Schema {
  const paths: Record<string, unknown> = {};
  for (const t of registry.types) {
    const prefix = t.group ? `/apis/${apiVersionOf(t)}` : `/api/${t.version}`;
    paths[`${prefix}${t.namespaced ? '/namespaces/{namespace}' : ''}/${t.plural}/{name}`] = {
      patch: {
        consumes: [
          'application/json-patch+json',
          'application/merge-patch+json',
          'application/strategic-merge-patch+json',
          'application/apply-patch+yaml',
        ],
        operationId: `patch${t.namespaced ? 'Namespaced' : ''}${t.kind}`,
        parameters: QUERY_PARAMS,
        'x-kubernetes-action': 'patch',
        'x-kubernetes-group-version-kind': { group: t.group, kind: t.kind, version: t.version },
      },
    };
  }
  return {
    swagger: '2.0',
    info: { title: 'Kubernetes', version },
    paths,
    definitions: JSON.parse(DEFINITIONS_JSON) as Record<string, Schema>,
  };
}

// Protocol buffers wire format: just the parts gnostic's OpenAPIv2.proto needs.
function varint(n: number): number[] {
  const out: number[] = [];
  let v = n;
  while (v > 0x7f) {
    out.push((v & 0x7f) | 0x80);
    v = Math.floor(v / 128);
  }
  out.push(v);
  return out;
}
function field(no: number, body: Buffer): Buffer {
  return Buffer.concat([Buffer.from([...varint((no << 3) | 2), ...varint(body.length)]), body]);
}
function str(no: number, s: string): Buffer {
  return field(no, Buffer.from(s, 'utf8'));
}
function bool(no: number, b: boolean): Buffer {
  return Buffer.from([...varint(no << 3), b ? 1 : 0]);
}
function int64(no: number, n: number): Buffer {
  return Buffer.from([...varint(no << 3), ...varint(n)]);
}
function double(no: number, n: number): Buffer {
  const b = Buffer.alloc(8);
  b.writeDoubleLE(n);
  return Buffer.concat([Buffer.from(varint((no << 3) | 1)), b]);
}
/** gnostic `Any`: the value as YAML, which JSON is. */
function any(no: number, v: unknown): Buffer {
  return field(no, str(2, JSON.stringify(v)));
}
function namedAny(no: number, name: string, v: unknown): Buffer {
  return field(no, Buffer.concat([str(1, name), any(2, v)]));
}

/** Field numbers of gnostic's `Schema` message. */
const SCHEMA_STRINGS: Record<string, number> = {
  $ref: 1,
  format: 2,
  title: 3,
  description: 4,
  pattern: 13,
  discriminator: 26,
};
const SCHEMA_DOUBLES: Record<string, number> = { multipleOf: 6, maximum: 7, minimum: 9 };
const SCHEMA_BOOLS: Record<string, number> = {
  exclusiveMaximum: 8,
  exclusiveMinimum: 10,
  uniqueItems: 16,
  readOnly: 27,
};
const SCHEMA_INTS: Record<string, number> = {
  maxLength: 11,
  minLength: 12,
  maxItems: 14,
  minItems: 15,
  maxProperties: 17,
  minProperties: 18,
};

function namedSchemas(no: number, map: unknown): Buffer {
  const entries = Object.entries((map ?? {}) as Record<string, Schema>);
  return Buffer.concat(entries.map(([k, v]) => field(no, Buffer.concat([str(1, k), field(2, schema(v))]))));
}

function schema(s: Schema): Buffer {
  const parts: Buffer[] = [];
  for (const [k, v] of Object.entries(s)) {
    const n = SCHEMA_STRINGS[k] ?? SCHEMA_DOUBLES[k] ?? SCHEMA_BOOLS[k] ?? SCHEMA_INTS[k];
    if (k in SCHEMA_STRINGS && typeof v === 'string' && n) parts.push(str(n, v));
    else if (k in SCHEMA_DOUBLES && typeof v === 'number' && n) parts.push(double(n, v));
    else if (k in SCHEMA_BOOLS && typeof v === 'boolean' && n) parts.push(bool(n, v));
    else if (k in SCHEMA_INTS && typeof v === 'number' && n) parts.push(int64(n, v));
    else if (k === 'default') parts.push(any(5, v));
    else if (k === 'example') parts.push(any(30, v));
    else if (k === 'required' && Array.isArray(v)) parts.push(...v.map((r) => str(19, String(r))));
    else if (k === 'enum' && Array.isArray(v)) parts.push(...v.map((e) => any(20, e)));
    else if (k === 'additionalProperties')
      parts.push(field(21, typeof v === 'boolean' ? bool(2, v) : field(1, schema(v as Schema))));
    else if (k === 'type')
      parts.push(field(22, Buffer.concat((Array.isArray(v) ? v : [v]).map((t) => str(1, String(t))))));
    else if (k === 'items')
      parts.push(
        field(23, Buffer.concat((Array.isArray(v) ? v : [v]).map((i) => field(1, schema(i as Schema))))),
      );
    else if (k === 'allOf' && Array.isArray(v)) parts.push(...v.map((a) => field(24, schema(a as Schema))));
    else if (k === 'properties') parts.push(field(25, namedSchemas(1, v)));
    else if (k.startsWith('x-')) parts.push(namedAny(31, k, v));
  }
  return Buffer.concat(parts);
}

/** A query parameter as `ParametersItem{Parameter{NonBodyParameter{QueryParameterSubSchema}}}`. */
function queryParameter(p: Record<string, unknown>): Buffer {
  const sub = Buffer.concat([
    str(2, String(p['in'])),
    str(4, String(p['name'])),
    str(6, String(p['type'])),
    bool(20, p['uniqueItems'] === true),
  ]);
  return field(1, field(2, field(3, sub)));
}

function operation(op: Record<string, unknown>): Buffer {
  const parts: Buffer[] = [];
  for (const [k, v] of Object.entries(op)) {
    if (k === 'operationId') parts.push(str(5, String(v)));
    else if (k === 'consumes' && Array.isArray(v)) parts.push(...v.map((c) => str(7, String(c))));
    else if (k === 'parameters' && Array.isArray(v))
      parts.push(...v.map((p) => field(8, queryParameter(p as Record<string, unknown>))));
    else if (k.startsWith('x-')) parts.push(namedAny(13, k, v));
  }
  return Buffer.concat(parts);
}

/** The document as gnostic's `openapi_v2.Document` message. */
export function encodeOpenApiProtobuf(doc: Schema): Buffer {
  const info = (doc['info'] ?? {}) as Record<string, string>;
  const paths = Object.entries((doc['paths'] ?? {}) as Record<string, Record<string, unknown>>).map(
    ([path, item]) =>
      field(
        2,
        Buffer.concat([
          str(1, path),
          field(2, field(8, operation(item['patch'] as Record<string, unknown>))),
        ]),
      ),
  );
  return Buffer.concat([
    str(1, '2.0'),
    field(2, Buffer.concat([str(1, info['title'] ?? ''), str(2, info['version'] ?? '')])),
    field(8, Buffer.concat(paths)),
    field(9, namedSchemas(1, doc['definitions'])),
  ]);
}
