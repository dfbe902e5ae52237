/**
 * Inputs for the fuzz tests: names that try to escape (path traversal, other namespaces, encoded
 * slashes, NUL, right-to-left marks, emoji, 1,000 characters), contract-valid request bodies built from
 * them, those bodies mutated (fields missing, of the wrong type, null, extra), arbitrary and deeply
 * nested JSON, and bytes that are not JSON at all.
 *
 * The valid bodies have CC's shapes (../../../shared/opi-contract.md, "What CC really sends and
 * reads"): `routes` as {"cf-router": [{hostname, port}]}, `egress_rules` as Diego's SecurityGroupRule in
 * protobuf JSON, `placement_tags` as isolation segment names, and CC's nulls (a public image's registry
 * credentials, a non-http check's endpoint, a first staging's cache fields) where CC sends them.
 */
import fc from 'fast-check';

const LABEL_VALUE = /^[A-Za-z0-9]([A-Za-z0-9_.-]{0,61}[A-Za-z0-9])?$/;
const DNS_LABEL = /^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/;
const ENV_NAME = /^[-._a-zA-Z][-._a-zA-Z0-9]{0,40}$/;

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

const envName = fc.oneof(
  fc.stringMatching(ENV_NAME),
  fc.constantFrom(
    'PORT',
    'CF_INSTANCE_PORT',
    'POD_NAME',
    'VCAP_SERVICES',
    '__proto__',
    'constructor',
    '.',
    '-',
  ),
);

/** Environment values, sometimes large (CC puts VCAP_SERVICES and VCAP_APPLICATION here). */
const envValue = fc.oneof(
  { arbitrary: fc.string({ unit: 'grapheme', maxLength: 60 }), weight: 6 },
  { arbitrary: fc.json({ maxDepth: 3 }), weight: 2 },
  { arbitrary: fc.integer({ min: 1, max: 120 }).map((k) => 'v'.repeat(k * 1024)), weight: 1 },
);

/** A qualified name (annotation key): prefix/name, the prefix sometimes over 253 characters. */
const qualifiedName = fc.oneof(
  fc.stringMatching(/^[A-Za-z0-9]([-A-Za-z0-9_.]{0,20}[A-Za-z0-9])?$/),
  fc
    .tuple(fc.stringMatching(/^[a-z0-9]([-a-z0-9]{0,10}[a-z0-9])?$/), fc.stringMatching(/^[a-z0-9]{1,10}$/))
    .map(([p, n]) => `${p}.io/${n}`),
  fc.constantFrom(
    'prometheus.io/scrape',
    'prometheus.io/port',
    'cloudfoundry.org/process_guid',
    `${'a'.repeat(63)}.${'b'.repeat(63)}.${'c'.repeat(63)}.${'d'.repeat(63)}/x`,
    `${'a.'.repeat(150)}io/x`,
    'x'.repeat(63),
  ),
);

const image = fc.oneof(
  fc.constantFrom(
    'nginx',
    'nginx:1.25',
    'registry.example.com:5000/team/app@sha256:' + 'a'.repeat(64),
    'docker.io/library/busybox:latest',
    'localhost/x',
  ),
  nameUpTo(200).filter((s) => s.trim().length > 0),
);

const command = fc.oneof(
  fc.constant([] as string[]),
  anyName.map((c) => ['/bin/sh', '-c', c]),
  fc.array(anyName, { maxLength: 5 }),
);

/** Registry credentials: given, left out (CC's kpack lifecycle), or CC's nil for a public image. */
const credentials: fc.Arbitrary<{ registry_username?: string | null; registry_password?: string | null }> =
  fc.oneof(
    {
      arbitrary: fc.record(
        { registry_username: nameUpTo(100), registry_password: nameUpTo(200) },
        { requiredKeys: [] },
      ),
      weight: 2,
    },
    { arbitrary: fc.constant({ registry_username: null, registry_password: null }), weight: 2 },
  );

export const dockerLifecycle = fc
  .tuple(image, command, credentials)
  .map(([img, cmd, creds]) => ({ docker_lifecycle: { image: img, command: cmd, ...creds } }));

export const buildpackLifecycle = fc
  .record({
    droplet_hash: fc.stringMatching(/^[a-f0-9]{1,64}$/),
    droplet_guid: labelValue,
    start_command: anyName,
  })
  .map((b) => ({ buildpack_lifecycle: b }));

const healthCheck = fc.oneof(
  // CC sends the process's endpoint whatever the type: nil (null) for every port, process or none check.
  fc
    .tuple(fc.constantFrom('port', 'process', 'none'), fc.boolean())
    .map(([type, nil]) =>
      nil ? { health_check_type: type, health_check_http_endpoint: null } : { health_check_type: type },
    ),
  fc.record({
    health_check_type: fc.constant('http'),
    health_check_http_endpoint: fc.oneof(
      fc.constantFrom('/', '/health', '/a b', 'no-slash', '/%00', '/../../etc'),
      nameUpTo(100).filter((s) => s.length > 0),
    ),
  }),
);

/** A millisecond count: ordinary, or anywhere up to the largest safe integer. */
const millis = fc.oneof(
  fc.integer({ min: 0, max: 600_000 }),
  fc.constantFrom(0, 1, 999, 2 ** 31, 2 ** 32, 2 ** 53 - 1),
  fc.maxSafeNat(),
);

const appPort = fc.integer({ min: 1, max: 65535 });

/** CC's HTTP routes of a process: `{"cf-router": [{hostname, port}]}`, the hostname maybe with a /path. */
export const routes = fc.record({
  'cf-router': fc.array(
    fc.record(
      {
        hostname: fc.oneof(
          { arbitrary: fc.domain(), weight: 4 },
          { arbitrary: fc.tuple(fc.domain(), fc.webPath()).map(([d, p]) => `${d}${p}`), weight: 2 },
          { arbitrary: nameUpTo(200), weight: 1 },
        ),
        port: appPort,
      },
      { requiredKeys: ['hostname'] },
    ),
    { maxLength: 4 },
  ),
});

const ipv4Range = fc.tuple(fc.ipV4(), fc.ipV4()).map(([a, b]) => `${a}-${b}`);
const cidr = fc.tuple(fc.ipV4(), fc.integer({ min: 0, max: 32 })).map(([ip, n]) => `${ip}/${n}`);

/** An ASG rule's destinations: addresses, CIDRs, `a.b.c.d-e.f.g.h` ranges (and, rarely, any string). */
const destinations = fc.array(
  fc.oneof(
    { arbitrary: fc.ipV4(), weight: 3 },
    { arbitrary: cidr, weight: 3 },
    { arbitrary: ipv4Range, weight: 2 },
    { arbitrary: fc.constantFrom('0.0.0.0/0', '10.0.0.0-10.255.255.255'), weight: 1 },
    { arbitrary: nameUpTo(256), weight: 1 },
  ),
  { minLength: 1, maxLength: 3 },
);

/** The rest of a rule in protobuf JSON: `log` only when true, `annotations` the groups' guids. */
const ruleExtras = {
  log: fc.constant(true),
  annotations: fc.array(
    fc.uuid().map((g) => `security_group_id:${g}`),
    { minLength: 1, maxLength: 3 },
  ),
};

/**
 * An application security group rule as CC sends it: Diego's SecurityGroupRule in protobuf JSON
 * (camelCase, default values left out, so an ICMP type and code of 0 are absent).
 */
export const egressRule = fc.oneof(
  fc.record(
    {
      protocol: fc.constantFrom('tcp', 'udp'),
      destinations,
      ports: fc.array(appPort, { minLength: 1, maxLength: 4 }),
      ...ruleExtras,
    },
    { requiredKeys: ['protocol', 'destinations', 'ports'] },
  ),
  fc.record(
    {
      protocol: fc.constantFrom('tcp', 'udp'),
      destinations,
      portRange: fc.tuple(appPort, appPort).map(([a, b]) => ({ start: Math.min(a, b), end: Math.max(a, b) })),
      ...ruleExtras,
    },
    { requiredKeys: ['protocol', 'destinations', 'portRange'] },
  ),
  fc.record(
    {
      protocol: fc.constant('icmp'),
      destinations,
      icmpInfo: fc.record(
        { type: fc.integer({ min: -1, max: 255 }), code: fc.integer({ min: -1, max: 255 }) },
        { requiredKeys: [] },
      ),
      ...ruleExtras,
    },
    { requiredKeys: ['protocol', 'destinations', 'icmpInfo'] },
  ),
  fc.record(
    { protocol: fc.constant('all'), destinations, ...ruleExtras },
    { requiredKeys: ['protocol', 'destinations'] },
  ),
);

/** Isolation segment names: CC sends `[]` or the space's one segment. */
const placementTags = fc.array(
  fc.oneof(fc.constantFrom('iso-seg-1', 'shared', 'persistent_isolation_segment'), nameUpTo(255)),
  { maxLength: 2 },
);

/** A desire body the contract accepts, with hostile names wherever the contract allows any string. */
export const desireBody = fc
  .record({
    guid: labelValue,
    version: labelValue,
    process_type: nameUpTo(63),
    app_guid: nameUpTo(63),
    app_name: nameUpTo(255),
    space_guid: nameUpTo(63),
    space_name: nameUpTo(255),
    organization_guid: nameUpTo(63),
    organization_name: nameUpTo(255),
    namespace: fc.option(fc.oneof(fc.constant(''), dnsLabel), { nil: undefined }),
    ports: fc.array(fc.integer({ min: 1, max: 65535 }), { minLength: 1, maxLength: 4 }),
    environment: fc.dictionary(envName, envValue, { maxKeys: 8 }),
    instances: fc.oneof(fc.integer({ min: 0, max: 5 }), fc.integer({ min: 0, max: 10_000 })),
    last_updated: nameUpTo(64),
    health: healthCheck,
    health_check_timeout_ms: millis,
    start_timeout_ms: millis,
    memory_mb: fc.integer({ min: 1, max: 1024 * 1024 }),
    disk_mb: fc.integer({ min: 1, max: 1024 * 1024 * 1024 }),
    cpu_weight: fc.integer({ min: 1, max: 100 }),
    // One mount per directory (the schema refuses two at one path, as Kubernetes would).
    volume_mounts: fc.uniqueArray(
      fc.record({
        volume_id: fc.oneof(
          fc.stringMatching(/^[a-z0-9]([-a-z0-9]{0,20}[a-z0-9])?(\.[a-z0-9]{1,5})?$/),
          fc.constant(`${'a'.repeat(63)}.${'b'.repeat(63)}`),
        ),
        mount_dir: fc.oneof(
          fc.constantFrom('/data', '/', '/../etc', '/var/vcap/data'),
          nameUpTo(100).map((s) => `/${s.replace(/\0/g, '')}`),
        ),
      }),
      { maxLength: 3, selector: (m) => m.mount_dir },
    ),
    lifecycle: fc.oneof(
      { arbitrary: dockerLifecycle, weight: 3 },
      { arbitrary: buildpackLifecycle, weight: 1 },
    ),
    user_defined_annotations: fc.dictionary(
      qualifiedName,
      fc.oneof(
        { arbitrary: fc.string({ maxLength: 40 }), weight: 8 },
        { arbitrary: fc.integer({ min: 1, max: 300 }).map((k) => 'a'.repeat(k * 1024)), weight: 1 },
      ),
      { maxKeys: 4 },
    ),
    placement_tags: placementTags,
    routes,
    egress_rules: fc.array(egressRule, { maxLength: 3 }),
  })
  .map(({ health, namespace, ...b }) => ({
    ...b,
    ...health,
    ...(namespace === undefined ? {} : { namespace }),
    process_guid: `${b.guid}-${b.version}`,
  }));

export type Body = Record<string, unknown>;

const callback = fc.oneof(
  fc.constantFrom(
    'https://cc.example/internal/v3/tasks/x/completed',
    'http://127.0.0.1:9023/x',
    'http://[::1]/x?y=z#f',
    'https://cc.example/../../etc/passwd',
  ),
  fc.webUrl(),
);

/** Diego's EnvironmentVariable in protobuf JSON: a value that is "" is left out. */
const envArray = fc.array(fc.record({ name: envName, value: envValue }, { requiredKeys: ['name'] }), {
  maxLength: 6,
});

export const taskBody = fc.record(
  {
    name: nameUpTo(255),
    app_guid: nameUpTo(63),
    app_name: nameUpTo(255),
    org_guid: nameUpTo(63),
    org_name: nameUpTo(255),
    space_guid: nameUpTo(63),
    space_name: nameUpTo(255),
    namespace: fc.oneof(fc.constant(''), dnsLabel),
    completion_callback: callback,
    environment: envArray,
    lifecycle: fc.oneof(dockerLifecycle, buildpackLifecycle),
    memory_mb: fc.integer({ min: 1, max: 1024 * 1024 }),
    disk_mb: fc.integer({ min: 1, max: 1024 * 1024 * 1024 }),
    cpu_weight: fc.integer({ min: 1, max: 100 }),
  },
  { requiredKeys: ['completion_callback', 'lifecycle'] },
);

/** Admin buildpacks carry a sha256 (nil for one uploaded before CC kept checksums); custom ones do not. */
const buildpacks = fc.array(
  fc.record(
    {
      name: nameUpTo(255),
      key: nameUpTo(255),
      url: fc.oneof(fc.webUrl(), nameUpTo(200)),
      sha256: fc.oneof(fc.stringMatching(/^[a-f0-9]{64}$/), fc.constant(null)),
      skip_detect: fc.boolean(),
    },
    { requiredKeys: ['name', 'key', 'url', 'skip_detect'] },
  ),
  { maxLength: 4 },
);

/** The buildpack cache: CC's nil download URI and checksum on an app's first staging, else both set. */
const buildpackCache = fc.oneof(
  fc.constant({ buildpack_cache_download_uri: null, buildpack_cache_checksum: null }),
  fc.record({
    buildpack_cache_download_uri: fc.webUrl(),
    buildpack_cache_checksum: fc.stringMatching(/^[a-f0-9]{0,64}$/),
  }),
  fc.record(
    {
      buildpack_cache_download_uri: fc.webUrl(),
      buildpack_cache_checksum: fc.stringMatching(/^[a-f0-9]{0,64}$/),
    },
    { requiredKeys: [] },
  ),
);

export const stagingBody = fc.record(
  {
    app_guid: nameUpTo(63),
    app_name: nameUpTo(255),
    org_guid: nameUpTo(63),
    org_name: nameUpTo(255),
    space_guid: nameUpTo(63),
    space_name: nameUpTo(255),
    completion_callback: callback,
    environment: envArray,
    lifecycle: fc.oneof(
      fc.tuple(image, credentials).map(([img, creds]) => ({ docker_lifecycle: { image: img, ...creds } })),
      fc
        .tuple(
          fc.record(
            {
              app_bits_download_uri: fc.webUrl(),
              droplet_upload_uri: fc.webUrl(),
              buildpacks,
              buildpack_cache_upload_uri: fc.webUrl(),
              buildpack_cache_checksum_algorithm: fc.constantFrom('sha256', 'md5', ''),
            },
            { requiredKeys: ['app_bits_download_uri', 'droplet_upload_uri'] },
          ),
          buildpackCache,
        )
        .map(([b, cache]) => ({ buildpack_lifecycle: { ...b, ...cache } })),
    ),
    memory_mb: fc.integer({ min: 1, max: 1024 * 1024 }),
    disk_mb: fc.integer({ min: 1, max: 1024 * 1024 * 1024 }),
    cpu_weight: fc.integer({ min: 1, max: 100 }),
  },
  { requiredKeys: ['completion_callback', 'lifecycle'] },
);

export const updateBody = fc.record({
  guid: labelValue,
  version: labelValue,
  update: fc.record(
    {
      instances: fc.integer({ min: 0, max: 10_000 }),
      annotation: nameUpTo(64),
      image: fc.oneof(image, fc.constantFrom('', '   ')),
      routes,
    },
    { requiredKeys: ['instances', 'annotation'] },
  ),
});

/** Any JSON value that is hostile as a field's value. */
const badValue: fc.Arbitrary<unknown> = fc.oneof(
  fc.constant(null),
  fc.constantFrom(true, 0, -1, 1.5, 2 ** 53, -(2 ** 31), 1e308, '', [], {}, '0', 'NaN'),
  hostile,
  fc.jsonValue({ maxDepth: 3 }),
);

type Mutation = { op: 'delete' | 'set' | 'add'; pick: number; depth: number; key: string; value: unknown };

const mutation: fc.Arbitrary<Mutation> = fc.record({
  op: fc.constantFrom('delete', 'set', 'set', 'add'),
  pick: fc.nat(),
  depth: fc.nat({ max: 3 }),
  key: fc.oneof(hostile, fc.string({ maxLength: 10 })),
  value: badValue,
});

function isObject(v: unknown): v is Body {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** Applies mutations to a deep copy: each walks down up to `depth` objects, then deletes, sets or adds. */
function mutate(body: Body, mutations: Mutation[]): Body {
  if (!isObject(body)) return body;
  const copy = structuredClone(body);
  for (const mutation of mutations) {
    // Each value is placed as its own copy: fc.constantFrom hands out the same `{}` and `[]` every time,
    // so a later mutation walking into a shared value would write into it (a circle, when it sets the
    // same value there, and a changed constant for every later case).
    const m = { ...mutation, value: structuredClone(mutation.value) };
    let target: Body = copy;
    for (let d = 0; d < m.depth; d++) {
      const children = Object.keys(target).filter((k) => isObject(target[k]));
      const next = children[m.pick % Math.max(1, children.length)];
      if (next === undefined) break;
      target = target[next] as Body;
    }
    const keys = Object.keys(target);
    const existing = keys[m.pick % Math.max(1, keys.length)];
    if (m.op === 'add' || existing === undefined) {
      Object.defineProperty(target, m.key, {
        value: m.value,
        enumerable: true,
        writable: true,
        configurable: true,
      });
    } else if (m.op === 'delete') {
      Reflect.deleteProperty(target, existing);
    } else {
      target[existing] = m.value;
    }
  }
  return copy;
}

/** A valid body of `arb`, mutated 1-4 times. */
export const mutated = (arb: fc.Arbitrary<Body>): fc.Arbitrary<Body> =>
  fc.tuple(arb, fc.array(mutation, { minLength: 1, maxLength: 4 })).map(([b, ms]) => mutate(b, ms));

/** `depth` nested arrays or objects, as text (JSON.stringify would need as deep a stack to write it). */
export const deepJson = fc
  .tuple(fc.integer({ min: 100, max: 20_000 }), fc.constantFrom('[', '{"a":', '{"lifecycle":'), fc.boolean())
  .map(([depth, open, closed]) => {
    const close = open === '[' ? ']' : '}';
    return open.repeat(depth) + (open === '[' ? '' : '1') + (closed ? close.repeat(depth) : '');
  });

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
